// Package labtest serves a lab's control API in tests.
package labtest

import (
	"context"
	"net"
	"net/http"
	"path/filepath"
	"testing"

	"github.com/mrc-fabric/mrcgen/internal/lab"
)

// Serve runs srv on the control socket of a new temporary directory until
// the test ends (then a Serve error fails the test) and returns the
// directory and an HTTP client of that socket, for requests lab.Client
// would not send (raw bodies: broken JSON, unknown fields, oversized).
func Serve(t testing.TB, srv *lab.Server) (dir string, raw *http.Client) {
	t.Helper()
	dir = t.TempDir()
	if err := srv.Listen(dir); err != nil {
		t.Fatal(err)
	}
	served := make(chan error, 1)
	go func() { served <- srv.Serve() }()
	var d net.Dialer
	raw = &http.Client{Transport: &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
		return d.DialContext(ctx, "unix", filepath.Join(dir, lab.ControlSocket))
	}}}
	t.Cleanup(func() {
		raw.CloseIdleConnections()
		srv.Close()
		if err := <-served; err != nil {
			t.Errorf("control server: %v", err)
		}
	})
	return dir, raw
}
