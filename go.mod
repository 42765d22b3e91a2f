module github.com/stockade-dev/stockade

go 1.26.0

require (
	github.com/pelletier/go-toml/v2 v2.4.3
	github.com/vmihailenco/msgpack/v5 v5.4.1
	golang.org/x/sys v0.49.0
)

require github.com/vmihailenco/tagparser/v2 v2.0.0 // indirect
