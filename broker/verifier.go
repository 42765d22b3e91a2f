package broker

import (
	"errors"
	"log/slog"
	"net"
	"os"
	"sync"
	"time"

	"github.com/stockade-dev/stockade/ipc"
)

// verifierLink is the broker's connection to the verifier. The supervisor
// hands the broker a new socket each time either role (re)starts.
type verifierLink struct {
	log *slog.Logger

	mu   sync.Mutex
	conn *ipc.Conn
	id   uint64
}

var errNoVerifier = errors.New("verifier not connected")

// replace installs a new link socket from the supervisor.
func (v *verifierLink) replace(f *os.File) {
	nc, err := net.FileConn(f)
	f.Close()
	if err != nil {
		v.log.Error("verifier link", "err", err)
		return
	}
	uc, ok := nc.(*net.UnixConn)
	if !ok {
		nc.Close()
		v.log.Error("verifier link is not a unix socket")
		return
	}
	c, err := ipc.NewConn(uc)
	if err != nil {
		uc.Close()
		v.log.Error("verifier link", "err", err)
		return
	}
	if _, err := c.Handshake(ipc.ChannelVerifier, "stockade-broker"); err != nil {
		c.Close()
		v.log.Error("verifier handshake", "err", err)
		return
	}
	v.mu.Lock()
	old := v.conn
	v.conn = c
	v.mu.Unlock()
	if old != nil {
		old.Close()
	}
	v.log.Info("verifier linked")
}

// status asks the verifier for its status.
func (v *verifierLink) status() (ipc.RoleStatus, error) {
	var st ipc.RoleStatus
	v.mu.Lock()
	defer v.mu.Unlock()
	if v.conn == nil {
		return st, errNoVerifier
	}
	v.id++
	err := v.conn.Call(v.id, ipc.KindStatus, ipc.Empty{}, &st, 5*time.Second)
	return st, err
}
