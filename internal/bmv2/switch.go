// Package bmv2 starts and drives BMv2 simple_switch_grpc processes for the
// lab: finding the tools, starting a switch on loopback ports, its
// dataplane packet stream, and its thrift runtime CLI.
package bmv2

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
)

// Tool names.
const (
	SimpleSwitchGRPC = "simple_switch_grpc"
	SimpleSwitchCLI  = "simple_switch_CLI"
	P4C              = "p4c-bm2-ss"
)

// EnvRequire, when set to 1, turns a missing tool into a failure instead of
// a skip: CI machines that are meant to have BMv2 set it.
const EnvRequire = "MRCGEN_REQUIRE_BMV2"

// EnvMarker is set in the environment of every switch the lab starts, with
// the lab's id as value, so that `lab down` finds them even after a crash.
const EnvMarker = "MRCGEN_LAB"

// Tools are the BMv2 and p4c binaries the lab runs.
type Tools struct {
	SimpleSwitchGRPC string
	SimpleSwitchCLI  string
	P4C              string
}

// FindTools looks the tools up on PATH, then in /opt/p4/bin. Missing lists
// the ones not found (simple_switch_CLI is optional: without it, congestion
// tests cannot throttle a port).
func FindTools() (t Tools, missing []string) {
	look := func(name string) string {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
		if p, err := exec.LookPath(filepath.Join("/opt/p4/bin", name)); err == nil {
			return p
		}
		return ""
	}
	t = Tools{SimpleSwitchGRPC: look(SimpleSwitchGRPC), SimpleSwitchCLI: look(SimpleSwitchCLI), P4C: look(P4C)}
	if t.SimpleSwitchGRPC == "" {
		missing = append(missing, SimpleSwitchGRPC)
	}
	if t.P4C == "" {
		missing = append(missing, P4C)
	}
	return t, missing
}

// Options configure one switch process.
type Options struct {
	Name     string
	DeviceID uint64
	// PriorityQueues per port (the MRC programs need 2).
	PriorityQueues int
	// LogDir receives <name>.log.
	LogDir string
	// LabID marks the process (EnvMarker).
	LabID string
	// Verbose turns BMv2's packet log on (slow).
	Verbose bool
}

// dataplaneWindow is the gRPC flow-control window of a dataplane stream:
// thousands of packets, far more than any test keeps in flight.
const dataplaneWindow = 4 << 20

// Switch is a running simple_switch_grpc.
type Switch struct {
	Name       string
	DeviceID   uint64
	GRPCAddr   string // P4Runtime
	DPAddr     string // dataplane packet stream
	ThriftPort int
	LogPath    string
	PID        int

	cmd *exec.Cmd
	// exited is closed once the process has exited; exitErr is what Wait
	// returned (written before the close).
	exited  chan struct{}
	exitErr error
	dp      *grpc.ClientConn
}

// freePorts reserves n loopback TCP ports by binding them, then releases
// them all at once for the switch to take.
func freePorts(n int) ([]int, error) {
	var ls []net.Listener
	defer func() {
		for _, l := range ls {
			l.Close()
		}
	}()
	ports := make([]int, n)
	for i := range ports {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, fmt.Errorf("reserve a loopback port: %w", err)
		}
		ls = append(ls, l)
		ports[i] = l.Addr().(*net.TCPAddr).Port
	}
	return ports, nil
}

// Start runs a switch with no pipeline (it gets one over P4Runtime), its
// P4Runtime and dataplane services on loopback, and waits until both
// answer. Ports are picked free and then checked to be the switch's own
// listeners: when another process took one in between, Start tries again
// with new ports.
func Start(ctx context.Context, tools Tools, o Options) (*Switch, error) {
	const attempts = 5
	var lastErr error
	for i := 0; i < attempts; i++ {
		s, err := start(ctx, tools, o)
		if err == nil {
			return s, nil
		}
		lastErr = err
		if ctx.Err() != nil {
			break
		}
	}
	return nil, lastErr
}

func start(ctx context.Context, tools Tools, o Options) (*Switch, error) {
	ports, err := freePorts(3)
	if err != nil {
		return nil, err
	}
	s := &Switch{
		Name:       o.Name,
		DeviceID:   o.DeviceID,
		GRPCAddr:   fmt.Sprintf("127.0.0.1:%d", ports[0]),
		DPAddr:     fmt.Sprintf("127.0.0.1:%d", ports[1]),
		ThriftPort: ports[2],
		LogPath:    filepath.Join(o.LogDir, o.Name+".log"),
		exited:     make(chan struct{}),
	}
	logf, err := os.Create(s.LogPath)
	if err != nil {
		return nil, fmt.Errorf("switch %s: log: %w", o.Name, err)
	}
	args := []string{"--no-p4", "--device-id", strconv.FormatUint(o.DeviceID, 10), "--thrift-port", strconv.Itoa(s.ThriftPort)}
	if o.Verbose {
		args = append(args, "--log-console", "--log-level", "trace")
	} else {
		args = append(args, "--log-level", "off")
	}
	args = append(args, "--",
		"--grpc-server-addr", s.GRPCAddr,
		"--dp-grpc-server-addr", s.DPAddr,
		"--priority-queues", strconv.Itoa(max(o.PriorityQueues, 1)))
	// Not CommandContext: the switch must outlive a cancelled start-up
	// context only until Stop, which the caller always calls.
	cmd := exec.Command(tools.SimpleSwitchGRPC, args...)
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.Env = append(os.Environ(), EnvMarker+"="+o.LabID)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		logf.Close()
		return nil, fmt.Errorf("switch %s: start %s: %w", o.Name, tools.SimpleSwitchGRPC, err)
	}
	s.cmd, s.PID = cmd, cmd.Process.Pid
	go func() {
		s.exitErr = cmd.Wait()
		close(s.exited)
		logf.Close()
	}()
	if err := s.waitReady(ctx); err != nil {
		s.Stop()
		return nil, err
	}
	for _, port := range ports {
		if ok, err := ownsListener(s.PID, port); err != nil || !ok {
			s.Stop()
			return nil, fmt.Errorf("switch %s: port %d is not its own listener (taken by another process?): %v", o.Name, port, err)
		}
	}
	// Fixed flow-control windows: they turn off gRPC's bandwidth-delay
	// estimation, whose pings would wake the switch's gRPC threads for
	// nothing on a loopback stream of small messages.
	conn, err := grpc.NewClient(s.DPAddr, grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithInitialWindowSize(dataplaneWindow), grpc.WithInitialConnWindowSize(dataplaneWindow))
	if err != nil {
		s.Stop()
		return nil, fmt.Errorf("switch %s: dataplane: %w", o.Name, err)
	}
	s.dp = conn
	return s, nil
}

func (s *Switch) waitReady(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	for _, addr := range []string{s.GRPCAddr, s.DPAddr, fmt.Sprintf("127.0.0.1:%d", s.ThriftPort)} {
		for {
			c, err := net.DialTimeout("tcp", addr, 200*time.Millisecond)
			if err == nil {
				c.Close()
				break
			}
			select {
			case <-s.exited:
				return fmt.Errorf("switch %s exited during start-up (%v): %s", s.Name, s.exitErr, s.LogTail(10))
			case <-ctx.Done():
				return fmt.Errorf("switch %s: %s not answering: %w: %s", s.Name, addr, ctx.Err(), s.LogTail(10))
			case <-time.After(50 * time.Millisecond):
			}
		}
	}
	return nil
}

// DataplaneConn is the gRPC connection to the switch's dataplane service.
func (s *Switch) DataplaneConn() *grpc.ClientConn { return s.dp }

// Alive reports whether the process is still running.
func (s *Switch) Alive() bool {
	select {
	case <-s.exited:
		return false
	default:
		return true
	}
}

// Exit is closed once the process has exited.
func (s *Switch) Exit() <-chan struct{} { return s.exited }

// ExitError is how the process ended (what exec's Wait returned: an exit
// status or a signal), or nil while it runs or when it exited with status 0.
func (s *Switch) ExitError() error {
	if s.Alive() {
		return nil
	}
	return s.exitErr
}

// Exited waits up to d for the process to exit and reports whether it did.
// A client sees the switch's connection close (EOF) a moment before the
// process's exit is collected: Exited gives that moment time to pass.
func (s *Switch) Exited(d time.Duration) bool {
	if d <= 0 {
		return !s.Alive()
	}
	select {
	case <-s.exited:
		return true
	case <-time.After(d):
		return false
	}
}

// Stop ends the switch: SIGTERM to its process group, SIGKILL after 3 s.
func (s *Switch) Stop() error {
	if s.dp != nil {
		s.dp.Close()
	}
	if s.cmd == nil || !s.Alive() {
		return nil
	}
	_ = syscall.Kill(-s.PID, syscall.SIGTERM)
	select {
	case <-s.exited:
		return nil
	case <-time.After(3 * time.Second):
	}
	_ = syscall.Kill(-s.PID, syscall.SIGKILL)
	select {
	case <-s.exited:
		return nil
	case <-time.After(3 * time.Second):
		return fmt.Errorf("switch %s (pid %d) did not exit", s.Name, s.PID)
	}
}

// LogTail returns the last n lines of the switch's log, on one line.
func (s *Switch) LogTail(n int) string {
	data, err := os.ReadFile(s.LogPath)
	if err != nil {
		return "(no log)"
	}
	lines := strings.Split(strings.TrimSpace(string(data)), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, " | ")
}

// ErrNoCLI is returned by CLI when simple_switch_CLI is not installed.
var ErrNoCLI = errors.New("simple_switch_CLI not found (BMv2 built with thrift provides it)")

// CLI runs commands through BMv2's thrift runtime CLI (what P4Runtime has
// no equivalent for, such as set_queue_rate).
func (s *Switch) CLI(ctx context.Context, tools Tools, commands ...string) (string, error) {
	if tools.SimpleSwitchCLI == "" {
		return "", ErrNoCLI
	}
	cmd := exec.CommandContext(ctx, tools.SimpleSwitchCLI, "--thrift-port", strconv.Itoa(s.ThriftPort))
	cmd.Stdin = strings.NewReader(strings.Join(commands, "\n") + "\n")
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		return out.String(), fmt.Errorf("switch %s: simple_switch_CLI: %w: %s", s.Name, err, out.String())
	}
	if strings.Contains(out.String(), "Error") || strings.Contains(out.String(), "Invalid") {
		return out.String(), fmt.Errorf("switch %s: simple_switch_CLI refused %q: %s", s.Name, commands, strings.TrimSpace(out.String()))
	}
	return out.String(), nil
}
