package audit

import (
	"testing"

	"github.com/stockade-dev/stockade/verifier/skill"
)

// TestHostImports: each capability unlocks its functions and nothing else.
func TestHostImports(t *testing.T) {
	none := HostImports(skill.Capabilities{})
	all := HostImports(skill.Capabilities{HTTP: []string{"a.example"}, Secrets: []string{"s"}, Storage: true, Channels: []string{"c"}})
	for _, name := range []string{"abi_version", "log", "handle", "result_read"} {
		if !none.Allows(Import{HostModule, name}) {
			t.Errorf("%s not always allowed", name)
		}
	}
	for _, name := range []string{"fd_write", "proc_exit", "random_get", "path_open"} {
		if !none.Allows(Import{WASIModule, name}) {
			t.Errorf("wasi %s not allowed", name)
		}
	}
	for _, name := range []string{"http_request", "secret_get", "kv_get", "kv_put", "kv_delete", "kv_list", "channel_send"} {
		if none.Allows(Import{HostModule, name}) {
			t.Errorf("%s allowed without its capability", name)
		}
		if !all.Allows(Import{HostModule, name}) {
			t.Errorf("%s not allowed with every capability", name)
		}
	}
	if all.Allows(Import{"env", "exec"}) || all.Allows(Import{HostModule, "exec"}) || all.Allows(Import{WASIModule, "http_request"}) {
		t.Error("an import outside the ABI is allowed")
	}
	if len(HostImports(skill.Capabilities{HTTP: []string{}, Secrets: []string{}})) != len(none) {
		t.Error("an empty capability list unlocks something")
	}
}
