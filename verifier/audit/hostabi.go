package audit

import "github.com/stockade-dev/stockade/verifier/skill"

// HostModule is the import module of Stockade's host functions (host ABI
// v1, defined by the Tier A runtime, executor/wasm). WASIModule is the
// restricted WASI preview 1 the runtime provides beside it: every function
// exists, with nothing behind the file-system and socket ones (they answer
// EBADF), so that standard toolchains' imports resolve. A skill's module may
// import from these two modules and from nowhere else.
const (
	HostModule = "stockade"
	WASIModule = "wasi_snapshot_preview1"
)

// The host ABI as the audit knows it: which host functions exist and which
// capability of skill.toml unlocks each. This is the one place that says
// which imports a skill may have; HostImports is the one function to extend
// when the ABI grows. The verifier cannot import the runtime's own table
// (roles do not import each other), so the names are repeated here: keep
// them equal to executor/wasm's Fn* constants and wasiFuncs
// (sdk's TestAuditImportsMatchRuntime holds the two to each other).
//
//	always            stockade: abi_version, log, handle, result_read
//	                  wasi_snapshot_preview1: all of preview 1 (restricted)
//	[capabilities]
//	  http = [...]    stockade: http_request
//	  secrets = [...] stockade: secret_get
//	  storage = true  stockade: kv_get, kv_put, kv_delete, kv_list
//	  channels = [..] stockade: channel_send
//
// A capability asked with an empty list (no hosts, no secrets, no channels)
// unlocks nothing. The broker still checks every host call against the
// grants of the call, host by host and name by name: the audit only keeps a
// module from importing a function its manifest gives it no reason to use.
var (
	hostAlways   = []string{"abi_version", "log", "handle", "result_read"}
	hostHTTP     = []string{"http_request"}
	hostSecrets  = []string{"secret_get"}
	hostStorage  = []string{"kv_get", "kv_put", "kv_delete", "kv_list"}
	hostChannels = []string{"channel_send"}
	wasiAll      = []string{
		"args_get", "args_sizes_get", "environ_get", "environ_sizes_get",
		"clock_res_get", "clock_time_get",
		"fd_advise", "fd_allocate", "fd_close", "fd_datasync", "fd_fdstat_get",
		"fd_fdstat_set_flags", "fd_fdstat_set_rights", "fd_filestat_get",
		"fd_filestat_set_size", "fd_filestat_set_times", "fd_pread", "fd_prestat_get",
		"fd_prestat_dir_name", "fd_pwrite", "fd_read", "fd_readdir", "fd_renumber",
		"fd_seek", "fd_sync", "fd_tell", "fd_write",
		"path_create_directory", "path_filestat_get", "path_filestat_set_times",
		"path_link", "path_open", "path_readlink", "path_remove_directory",
		"path_rename", "path_symlink", "path_unlink_file",
		"poll_oneoff", "proc_exit", "proc_raise", "sched_yield", "random_get",
		"sock_accept", "sock_recv", "sock_send", "sock_shutdown",
	}
)

// HostImports returns the host functions a skill with capabilities c may
// import.
func HostImports(c skill.Capabilities) Imports {
	names := append([]string(nil), hostAlways...)
	if len(c.HTTP) > 0 {
		names = append(names, hostHTTP...)
	}
	if len(c.Secrets) > 0 {
		names = append(names, hostSecrets...)
	}
	if c.Storage {
		names = append(names, hostStorage...)
	}
	if len(c.Channels) > 0 {
		names = append(names, hostChannels...)
	}
	list := make([]Import, 0, len(names)+len(wasiAll))
	for _, n := range names {
		list = append(list, Import{Module: HostModule, Name: n})
	}
	for _, n := range wasiAll {
		list = append(list, Import{Module: WASIModule, Name: n})
	}
	return NewImports(list...)
}
