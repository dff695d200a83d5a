package bmv2

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"strconv"
	"syscall"
	"testing"
)

// reusePortEnv makes the test binary a helper process that listens on the
// given port with SO_REUSEPORT, as gRPC's C++ server does, prints a line
// and waits.
const reusePortEnv = "MRCGEN_BMV2_TEST_REUSEPORT"

func listenReusePort(port int) (net.Listener, error) {
	lc := net.ListenConfig{Control: func(_, _ string, c syscall.RawConn) error {
		var serr error
		if err := c.Control(func(fd uintptr) {
			serr = syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, 0xf /* SO_REUSEPORT on Linux */, 1)
		}); err != nil {
			return err
		}
		return serr
	}}
	return lc.Listen(context.Background(), "tcp4", fmt.Sprintf("127.0.0.1:%d", port))
}

func TestMain(m *testing.M) {
	if v := os.Getenv(reusePortEnv); v != "" {
		port, _ := strconv.Atoi(v)
		l, err := listenReusePort(port)
		if err != nil {
			fmt.Println("error:", err)
			os.Exit(1)
		}
		defer l.Close()
		fmt.Println("listening")
		bufio.NewReader(os.Stdin).ReadString('\n') // until the test closes stdin
		return
	}
	os.Exit(m.Run())
}

// A port another process also listens on (SO_REUSEPORT, as two switches
// given one port do) is not the switch's own.
func TestOwnsListenerSharedPort(t *testing.T) {
	l, err := listenReusePort(0)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	port := l.Addr().(*net.TCPAddr).Port
	if ok, err := ownsListener(os.Getpid(), port); err != nil || !ok {
		t.Fatalf("sole listener: ownsListener = %v, %v", ok, err)
	}
	cmd := exec.Command(os.Args[0], "-test.run", "^$")
	cmd.Env = append(os.Environ(), fmt.Sprintf("%s=%d", reusePortEnv, port))
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { stdin.Close(); cmd.Wait() }()
	if line, _ := bufio.NewReader(stdout).ReadString('\n'); line != "listening\n" {
		t.Fatalf("helper: %q", line)
	}
	if ok, err := ownsListener(os.Getpid(), port); err != nil || ok {
		t.Fatalf("port shared with pid %d: ownsListener = %v, %v; want false", cmd.Process.Pid, ok, err)
	}
}
