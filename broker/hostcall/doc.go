// Package hostcall performs the host capabilities of Tier A skills for the
// broker: http_request (HTTP), kv_get/kv_put/kv_delete/kv_list (KV) and
// secret_get (Secrets), within a Grant that Intersect makes from what the
// skill's manifest asks and what the operator's policy allows. A Tier A
// executor has no network, no store and no secrets; it forwards the
// guest's host calls, and the broker answers them with this package.
//
// The wire shapes are those of the host ABI, version 1 (package
// executor/wasm and docs/SKILLS.md); request.go draws the http_request
// exchange. Every error wraps one of ErrDenied, ErrUnavailable,
// ErrInvalid, ErrQuota or ErrNotFound, the classes that map one to one
// onto the ABI's error codes. The text of an error is for the broker's
// log: it names hosts, ports, addresses and secret names, never secret
// values, keys, values, URL paths or queries (where a guest may have put a
// secret), and it must not go back to the guest.
//
// # Security
//
// What this package trusts:
//
//   - The broker, for every Grant, skill id and Secrets value. A Grant is
//     the broker's word (Intersect of the verified manifest and the
//     operator's policy) and never comes from guest bytes; the skill id
//     comes from the verifier's record of the skill, never from the guest.
//     An IP-literal host or AllowPrivate in the operator's grant is the
//     operator's explicit permission to reach a non-public address.
//   - The executor, to deliver a guest's request unaltered and to say
//     which call (and so which Grant and skill id) it belongs to. It is
//     not trusted for anything else: it runs hostile code.
//   - The guest for nothing. A request, key, value or prefix is hostile
//     bytes: requests are decoded strictly (UTF-8, one JSON object, known
//     keys only, no key twice, types checked, sizes capped, no trailing
//     data) and anything malformed is ErrInvalid, never repaired; keys are
//     checked for size, UTF-8 and NUL.
//   - The operating system's resolver (or the Resolver given), for what
//     a name resolves to, but not for whether that address may be
//     reached: every address is checked against the grant, a name with
//     one refused address is refused whole (DNS rebinding answers mix
//     them), and the connection goes to an address that was checked,
//     never to a second lookup. The system's TLS roots (or RootCAs).
//   - The store file, which is the broker's own (mode 0600, its owner,
//     no symbolic link, locked by bbolt while open). A file tampered with
//     by someone who can write the broker's state directory is out of
//     scope: bbolt does not authenticate its pages.
//
// What it refuses on the network, unless the grant names the address:
// loopback, RFC 1918, ULA, link-local, CGNAT, documentation,
// benchmarking and other special-purpose ranges (AllowPrivate or the IP
// literal); cloud metadata endpoints (only the IP literal, AllowPrivate
// is not enough); and, always, unspecified, multicast, broadcast and
// reserved addresses. See HostGrant. Redirects are followed only within
// the origin (at most three); the proxy settings of the environment are
// ignored and no cookie is kept.
//
// Secret values leave Secrets only through Get. Secrets redacts itself in
// fmt, slog and JSON output, and a Grant holds names only, so logging
// either is safe; the bytes Get returns are the caller's to keep out of
// logs and attestations.
//
// # The store: why bbolt
//
// KV keeps every skill's data in one bbolt file (go.etcd.io/bbolt), the
// one dependency this package adds. bbolt is a pure-Go (CGO_ENABLED=0)
// B+tree in a single file, with serialisable transactions that it fsyncs
// before Commit returns (copy-on-write pages and two alternating meta
// pages, so a crash at any point leaves the last committed state), an
// exclusive file lock against a second opener, and nested buckets, which
// give one namespace per skill id. It is etcd's storage engine, maintained
// by the etcd project, and small (no dependency outside golang.org/x). The
// alternatives were a log we write ourselves (more code to get crash
// safety right) or SQLite (cgo, or a large pure-Go translation).
//
// The package imports no role: the broker calls it.
package hostcall
