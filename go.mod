module github.com/stockade-dev/stockade

go 1.26.0

require (
	github.com/cedar-policy/cedar-go v1.9.0
	github.com/landlock-lsm/go-landlock v0.11.0
	github.com/pelletier/go-toml/v2 v2.4.3
	github.com/tetratelabs/wazero v1.12.0
	github.com/vmihailenco/msgpack/v5 v5.4.1
	go.etcd.io/bbolt v1.5.0
	golang.org/x/sys v0.49.0
)

require (
	github.com/go-json-experiment/json v0.0.0-20260820222146-c27c302e5fc3 // indirect
	github.com/vmihailenco/tagparser/v2 v2.0.0 // indirect
	golang.org/x/exp v0.0.0-20220921023135-46d9e7742f1e // indirect
	kernel.org/pub/linux/libs/security/libcap/psx v1.2.77 // indirect
)
