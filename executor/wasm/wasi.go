package wasm

import (
	"context"
	"crypto/rand"
	"encoding/binary"
	"time"

	"github.com/tetratelabs/wazero/api"
)

// wasiModule is the import module of WASI preview 1.
const wasiModule = "wasi_snapshot_preview1"

// WASI errno values (preview 1).
const (
	errnoSuccess = 0
	errnoBadf    = 8
	errnoFault   = 21
	errnoInval   = 28
	errnoNosys   = 52
	errnoNotdir  = 54
	errnoNotsock = 57
	errnoNotsup  = 58
	errnoSpipe   = 70
)

// WASI constants.
const (
	clockRealtime  = 0
	clockMonotonic = 1

	filetypeCharacterDevice = 2

	rightFDRead          = 1 << 1
	rightFDWrite         = 1 << 6
	rightPollFDReadwrite = 1 << 27

	eventClock   = 0
	eventFDRead  = 1
	eventFDWrite = 2

	subscriptionClockAbstime = 1
	eventFDReadwriteHangup   = 1

	subscriptionSize = 48
	eventSize        = 32
	iovSize          = 8

	maxIOVs          = 1024 // like IOV_MAX
	maxSubscriptions = 1024
)

// wasiFuncs is the restricted "wasi_snapshot_preview1": every function of
// the standard, with its signature, most of them refusing.
var wasiFuncs = []hostFunc{
	{"args_get", types(i32, i32), types(i32), wasiEmptyGet},
	{"args_sizes_get", types(i32, i32), types(i32), wasiEmptySizes},
	{"environ_get", types(i32, i32), types(i32), wasiEmptyGet},
	{"environ_sizes_get", types(i32, i32), types(i32), wasiEmptySizes},
	{"clock_res_get", types(i32, i32), types(i32), wasiClockResGet},
	{"clock_time_get", types(i32, i64, i32), types(i32), wasiClockTimeGet},
	{"fd_advise", types(i32, i64, i64, i32), types(i32), fdStub(errnoNotsup)},
	{"fd_allocate", types(i32, i64, i64), types(i32), fdStub(errnoNotsup)},
	{"fd_close", types(i32), types(i32), fdStub(errnoNotsup)},
	{"fd_datasync", types(i32), types(i32), fdStub(errnoNotsup)},
	{"fd_fdstat_get", types(i32, i32), types(i32), wasiFdstatGet},
	{"fd_fdstat_set_flags", types(i32, i32), types(i32), fdStub(errnoNotsup)},
	{"fd_fdstat_set_rights", types(i32, i64, i64), types(i32), fdStub(errnoNotsup)},
	{"fd_filestat_get", types(i32, i32), types(i32), wasiFilestatGet},
	{"fd_filestat_set_size", types(i32, i64), types(i32), fdStub(errnoNotsup)},
	{"fd_filestat_set_times", types(i32, i64, i64, i32), types(i32), fdStub(errnoNotsup)},
	{"fd_pread", types(i32, i32, i32, i64, i32), types(i32), fdStub(errnoSpipe)},
	{"fd_prestat_get", types(i32, i32), types(i32), stub(errnoBadf)},
	{"fd_prestat_dir_name", types(i32, i32, i32), types(i32), stub(errnoBadf)},
	{"fd_pwrite", types(i32, i32, i32, i64, i32), types(i32), fdStub(errnoSpipe)},
	{"fd_read", types(i32, i32, i32, i32), types(i32), wasiFdRead},
	{"fd_readdir", types(i32, i32, i32, i64, i32), types(i32), fdStub(errnoNotdir)},
	{"fd_renumber", types(i32, i32), types(i32), fdStub(errnoNotsup)},
	{"fd_seek", types(i32, i64, i32, i32), types(i32), fdStub(errnoSpipe)},
	{"fd_sync", types(i32), types(i32), fdStub(errnoNotsup)},
	{"fd_tell", types(i32, i32), types(i32), fdStub(errnoSpipe)},
	{"fd_write", types(i32, i32, i32, i32), types(i32), wasiFdWrite},
	{"path_create_directory", types(i32, i32, i32), types(i32), fdStub(errnoNotdir)},
	{"path_filestat_get", types(i32, i32, i32, i32, i32), types(i32), fdStub(errnoNotdir)},
	{"path_filestat_set_times", types(i32, i32, i32, i32, i64, i64, i32), types(i32), fdStub(errnoNotdir)},
	{"path_link", types(i32, i32, i32, i32, i32, i32, i32), types(i32), fdStub(errnoNotdir)},
	{"path_open", types(i32, i32, i32, i32, i32, i64, i64, i32, i32), types(i32), fdStub(errnoNotdir)},
	{"path_readlink", types(i32, i32, i32, i32, i32, i32), types(i32), fdStub(errnoNotdir)},
	{"path_remove_directory", types(i32, i32, i32), types(i32), fdStub(errnoNotdir)},
	{"path_rename", types(i32, i32, i32, i32, i32, i32), types(i32), fdStub(errnoNotdir)},
	{"path_symlink", types(i32, i32, i32, i32, i32), types(i32), stub(errnoBadf)},
	{"path_unlink_file", types(i32, i32, i32), types(i32), fdStub(errnoNotdir)},
	{"poll_oneoff", types(i32, i32, i32, i32), types(i32), wasiPollOneoff},
	{"proc_exit", types(i32), nil, wasiProcExit},
	{"proc_raise", types(i32), types(i32), stub(errnoNosys)},
	{"sched_yield", nil, types(i32), stub(errnoSuccess)},
	{"random_get", types(i32, i32), types(i32), wasiRandomGet},
	{"sock_accept", types(i32, i32, i32), types(i32), fdStub(errnoNotsock)},
	{"sock_recv", types(i32, i32, i32, i32, i32, i32), types(i32), fdStub(errnoNotsock)},
	{"sock_send", types(i32, i32, i32, i32, i32), types(i32), fdStub(errnoNotsock)},
	{"sock_shutdown", types(i32, i32), types(i32), fdStub(errnoNotsock)},
}

func errno(stack []uint64, e uint32) { stack[0] = uint64(e) }

// stub returns e, whatever the arguments.
func stub(e uint32) api.GoModuleFunc {
	return func(ctx context.Context, mod api.Module, stack []uint64) {
		enter(ctx, mod, 0)
		errno(stack, e)
	}
}

// fdStub is a function whose first argument is a descriptor: stdio gets
// e, any other descriptor EBADF (there are no others).
func fdStub(e uint32) api.GoModuleFunc {
	return func(ctx context.Context, mod api.Module, stack []uint64) {
		enter(ctx, mod, 0)
		if u32(stack[0]) <= 2 {
			errno(stack, e)
		} else {
			errno(stack, errnoBadf)
		}
	}
}

// wasiEmptyGet is args_get and environ_get: there is nothing to write.
func wasiEmptyGet(ctx context.Context, mod api.Module, stack []uint64) {
	enter(ctx, mod, 0)
	errno(stack, errnoSuccess)
}

// wasiEmptySizes is args_sizes_get and environ_sizes_get: 0 and 0.
func wasiEmptySizes(ctx context.Context, mod api.Module, stack []uint64) {
	st := enter(ctx, mod, 8)
	if !st.writeU32(u32(stack[0]), 0) || !st.writeU32(u32(stack[1]), 0) {
		errno(stack, errnoFault)
		return
	}
	errno(stack, errnoSuccess)
}

func wasiClockResGet(ctx context.Context, mod api.Module, stack []uint64) {
	st := enter(ctx, mod, 8)
	switch u32(stack[0]) {
	case clockRealtime, clockMonotonic:
	default:
		errno(stack, errnoInval)
		return
	}
	if !st.writeU64(u32(stack[1]), 1) {
		errno(stack, errnoFault)
		return
	}
	errno(stack, errnoSuccess)
}

// now returns the time of clock id in nanoseconds.
func (st *callState) now(id uint32) (uint64, bool) {
	switch id {
	case clockRealtime:
		return uint64(time.Now().UnixNano()), true
	case clockMonotonic:
		// Never 0, and increasing for the life of the Engine.
		return uint64(time.Since(st.engine.epoch).Nanoseconds()) + 1, true
	}
	return 0, false
}

func wasiClockTimeGet(ctx context.Context, mod api.Module, stack []uint64) {
	st := enter(ctx, mod, 8)
	t, ok := st.now(u32(stack[0]))
	if !ok {
		errno(stack, errnoInval)
		return
	}
	if !st.writeU64(u32(stack[2]), t) {
		errno(stack, errnoFault)
		return
	}
	errno(stack, errnoSuccess)
}

// wasiFdstatGet describes fds 0 to 2 as character devices, readable or
// writable.
func wasiFdstatGet(ctx context.Context, mod api.Module, stack []uint64) {
	st := enter(ctx, mod, 24)
	fd, ptr := u32(stack[0]), u32(stack[1])
	if fd > 2 {
		errno(stack, errnoBadf)
		return
	}
	buf, ok := st.view(ptr, 24)
	if !ok {
		errno(stack, errnoFault)
		return
	}
	rights := uint64(rightFDWrite | rightPollFDReadwrite)
	if fd == 0 {
		rights = rightFDRead | rightPollFDReadwrite
	}
	clear(buf)
	buf[0] = filetypeCharacterDevice
	binary.LittleEndian.PutUint64(buf[8:], rights)
	errno(stack, errnoSuccess)
}

// wasiFilestatGet describes fds 0 to 2 as empty character devices.
func wasiFilestatGet(ctx context.Context, mod api.Module, stack []uint64) {
	st := enter(ctx, mod, 64)
	fd, ptr := u32(stack[0]), u32(stack[1])
	if fd > 2 {
		errno(stack, errnoBadf)
		return
	}
	buf, ok := st.view(ptr, 64)
	if !ok {
		errno(stack, errnoFault)
		return
	}
	clear(buf)
	buf[16] = filetypeCharacterDevice
	errno(stack, errnoSuccess)
}

// iovecs reads an array of n iovecs at ptr and returns the buffers they
// name, bounds-checked, and their total length.
func (st *callState) iovecs(ptr, n uint32) ([][]byte, uint64, bool) {
	if n > maxIOVs {
		return nil, 0, false
	}
	arr, ok := st.view(ptr, n*iovSize)
	if !ok {
		return nil, 0, false
	}
	bufs := make([][]byte, n)
	var total uint64
	for i := range bufs {
		p := binary.LittleEndian.Uint32(arr[i*iovSize:])
		l := binary.LittleEndian.Uint32(arr[i*iovSize+4:])
		b, ok := st.view(p, l)
		if !ok {
			return nil, 0, false
		}
		bufs[i] = b
		total += uint64(l)
	}
	return bufs, total, true
}

// wasiFdWrite captures writes to fds 1 and 2 under the output quota.
func wasiFdWrite(ctx context.Context, mod api.Module, stack []uint64) {
	fd, iovs, n, nwritten := u32(stack[0]), u32(stack[1]), u32(stack[2]), u32(stack[3])
	st := enter(ctx, mod, 0)
	if fd != 1 && fd != 2 {
		errno(stack, errnoBadf)
		return
	}
	bufs, total, ok := st.iovecs(iovs, n)
	if !ok {
		errno(stack, errnoFault)
		return
	}
	if _, ok := st.view(nwritten, 4); !ok {
		errno(stack, errnoFault)
		return
	}
	if err := st.meter.Charge(total / 64); err != nil {
		panic(err)
	}
	dst := &st.stdout
	if fd == 2 {
		dst = &st.stderr
	}
	for _, b := range bufs {
		st.capture(dst, b)
	}
	st.writeU32(nwritten, uint32(total))
	errno(stack, errnoSuccess)
}

// wasiFdRead: stdin is empty; there is nothing else to read.
func wasiFdRead(ctx context.Context, mod api.Module, stack []uint64) {
	st := enter(ctx, mod, 0)
	fd, nread := u32(stack[0]), u32(stack[3])
	if fd != 0 {
		errno(stack, errnoBadf)
		return
	}
	if !st.writeU32(nread, 0) {
		errno(stack, errnoFault)
		return
	}
	errno(stack, errnoSuccess)
}

func wasiRandomGet(ctx context.Context, mod api.Module, stack []uint64) {
	ptr, n := u32(stack[0]), u32(stack[1])
	st := enter(ctx, mod, uint64(n))
	buf, ok := st.view(ptr, n)
	if !ok {
		errno(stack, errnoFault)
		return
	}
	rand.Read(buf)
	errno(stack, errnoSuccess)
}

func wasiProcExit(ctx context.Context, mod api.Module, stack []uint64) {
	enter(ctx, mod, 0)
	panic(procExit(u32(stack[0])))
}

// wasiPollOneoff waits for clock subscriptions (until the call's deadline
// at most) and reports stdio ready at once: stdin at end of file, stdout
// and stderr writable.
func wasiPollOneoff(ctx context.Context, mod api.Module, stack []uint64) {
	in, out, n, neventsPtr := u32(stack[0]), u32(stack[1]), u32(stack[2]), u32(stack[3])
	st := enter(ctx, mod, uint64(n)*(subscriptionSize+eventSize))
	if n == 0 || n > maxSubscriptions {
		errno(stack, errnoInval)
		return
	}
	subs, ok := st.read(in, n*subscriptionSize)
	if !ok {
		errno(stack, errnoFault)
		return
	}
	events, ok := st.view(out, n*eventSize)
	if !ok {
		errno(stack, errnoFault)
		return
	}
	if _, ok := st.view(neventsPtr, 4); !ok {
		errno(stack, errnoFault)
		return
	}
	type event struct {
		userdata uint64
		err      uint16
		typ      uint8
		hangup   bool
	}
	var ready []event
	var timers []event
	var wait []time.Duration
	for i := uint32(0); i < n; i++ {
		s := subs[i*subscriptionSize:]
		ev := event{userdata: binary.LittleEndian.Uint64(s), typ: s[8]}
		switch ev.typ {
		case eventClock:
			id := binary.LittleEndian.Uint32(s[16:])
			timeout := binary.LittleEndian.Uint64(s[24:])
			flags := binary.LittleEndian.Uint16(s[40:])
			now, ok := st.now(id)
			if !ok {
				ev.err = errnoInval
				ready = append(ready, ev)
				continue
			}
			d := timeout
			if flags&subscriptionClockAbstime != 0 {
				d = 0
				if timeout > now {
					d = timeout - now
				}
			}
			timers = append(timers, ev)
			wait = append(wait, time.Duration(min(d, uint64(1<<62))))
		case eventFDRead, eventFDWrite:
			fd := binary.LittleEndian.Uint32(s[16:])
			switch {
			case ev.typ == eventFDRead && fd == 0:
				ev.hangup = true
			case ev.typ == eventFDWrite && (fd == 1 || fd == 2):
			default:
				ev.err = errnoBadf
			}
			ready = append(ready, ev)
		default:
			errno(stack, errnoInval)
			return
		}
	}
	if len(ready) == 0 {
		d := wait[0]
		for _, w := range wait[1:] {
			d = min(d, w)
		}
		if d > 0 {
			t := time.NewTimer(d)
			select {
			case <-t.C:
			case <-ctx.Done():
				t.Stop()
				st.checkContext(ctx)
			}
		}
		for i, ev := range timers {
			if wait[i] <= d {
				ready = append(ready, ev)
			}
		}
	}
	clear(events)
	for i, ev := range ready {
		e := events[i*eventSize:]
		binary.LittleEndian.PutUint64(e, ev.userdata)
		binary.LittleEndian.PutUint16(e[8:], ev.err)
		e[10] = ev.typ
		if ev.hangup {
			binary.LittleEndian.PutUint16(e[24:], eventFDReadwriteHangup)
		}
	}
	st.writeU32(neventsPtr, uint32(len(ready)))
	errno(stack, errnoSuccess)
}
