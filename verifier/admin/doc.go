// Package admin is the admin protocol of the verifier: the messages that
// travel on admin.sock (ipc.ChannelAdmin) and a client for the
// stockade-verifier CLI.
//
// The conversation (after ipc's Hello), one request at a time:
//
//	CLI (an admin)                              verifier
//	  status{}                       ─────────►  status{ipc.RoleStatus}
//	  install{} + fds archive, .sig  ─────────►  install{Release}      verify, audit, install, admit
//	  list{}                         ─────────►  list{ReleaseList}
//	  show{SkillRef}                 ─────────►  show{SkillInfo}
//	  promote{ReleaseRef}            ─────────►  promote{Release}      re-hash, then promote the digest
//	  disable{SkillRef} / enable{SkillRef} ───►  same kind{}
//	  remove{ReleaseRef}             ─────────►  remove{}              store first, then files
//	  revoke_key{KeyRef}             ─────────►  revoke_key{}
//	  revoke_skill{ReleaseRef}       ─────────►  revoke_skill{}
//	  trust_list{}                   ─────────►  trust_list{KeyList}
//	  import_rotation{RotationRequest} ───────►  import_rotation{Key}
//	  doctor{}                       ─────────►  doctor{DoctorReport}  read-only
//	                                 ◄─────────  or error{class, reason, message}
//
// Every refusal carries a Reason from a closed set (errors.go; the CLI maps
// them to exit codes). The archive and its signature travel as file
// descriptors (SCM_RIGHTS) so that the verifier never opens a path an admin
// names, and so that a 64 MiB archive does not have to fit a frame.
//
// # Security
//
// The verifier trusts this package's messages no more than any other peer's:
// admin.sock admits root, the configured admin uids and members of the admin
// groups (the kernel's SO_PEERCRED and SO_PEERGROUPS), and refuses processes
// that descend from an executor; every body is walked and decoded strictly
// (ipc) and every argument parsed again by the verifier. The client trusts
// the verifier's replies to the extent of decoding them strictly.
package admin
