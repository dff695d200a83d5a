// Package swx runs a DPDK SWX pipeline (the .spec p4c-dpdk writes for the
// PNA NIC program) in DPDK's `pipeline` example app, as
// tools/build-dpdk-pna.sh builds it (dpdk-pipeline): one af_packet port per
// NIC port on a veth pair whose other end is in a network namespace of its
// own, table entries translated from mrcgen's entries by name, loaded and
// committed over the app's TCP CLI, registers and counters read back the
// same way. It needs root (veths, namespaces, raw sockets).
package swx

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/mrc-fabric/mrcgen/p4/p4c"
	"github.com/mrc-fabric/mrcgen/p4/pna"
	"github.com/mrc-fabric/mrcgen/p4/schema"
	"github.com/mrc-fabric/mrcgen/tables/entry"
)

// App is the pipeline app's name on PATH (tools/build-dpdk-pna.sh).
const App = "dpdk-pipeline"

// ErrNotFound is returned by FindTools when the app or the DPDK headers its
// `pipeline libbuild` compiles against are missing.
var ErrNotFound = errors.New("DPDK SWX pipeline app (dpdk-pipeline) not found")

// ErrUnpatched is returned by FindTools when the app would run with
// DPDK 22.11's own librte_pipeline, whose instructions address fields by a
// uint8_t byte offset: the NIC program's metadata (1.6 KB, every p4c-dpdk
// temporary) would alias past byte 255 (tools/build-dpdk-pna.sh, pipelib).
var ErrUnpatched = errors.New("DPDK's librte_pipeline is not the one with 16-bit operand offsets")

// Tools are what Start runs.
type Tools struct {
	App string
	// RTEInstallDir holds the DPDK source headers `pipeline libbuild`
	// compiles the pipeline's C code against ($RTE_INSTALL_DIR).
	RTEInstallDir string
	// LibDir holds the patched librte_pipeline.so.23 the app must load.
	LibDir string
}

// FindTools finds dpdk-pipeline ($MRCGEN_DPDK_PIPELINE, PATH, then
// /opt/dpdk-pna/bin) and, in its prefix, the patched librte_pipeline
// (PREFIX/lib) and the headers (PREFIX/share/dpdk-swx, or
// $RTE_INSTALL_DIR) that tools/build-dpdk-pna.sh installs there.
func FindTools() (Tools, error) {
	app, found, err := p4c.Lookup("", "MRCGEN_DPDK_PIPELINE", App, filepath.Join(pna.Prefix, "bin", App))
	if err != nil {
		return Tools{}, err
	}
	if !found {
		return Tools{}, fmt.Errorf("%w on PATH or in %s/bin: build it with tools/build-dpdk-pna.sh", ErrNotFound, pna.Prefix)
	}
	prefix := filepath.Dir(filepath.Dir(app))
	dir := os.Getenv("RTE_INSTALL_DIR")
	if dir == "" {
		dir = filepath.Join(prefix, "share", "dpdk-swx")
	}
	h, err := os.ReadFile(filepath.Join(dir, "lib", "pipeline", "rte_swx_pipeline_internal.h"))
	if err != nil {
		return Tools{}, fmt.Errorf("%w: no DPDK source headers in %s (tools/build-dpdk-pna.sh's swx stage): %v", ErrNotFound, dir, err)
	}
	lib := filepath.Join(prefix, "lib")
	_, libErr := os.Stat(filepath.Join(lib, "librte_pipeline.so.23"))
	if !strings.Contains(string(h), "struct instr_operand {\n\tuint8_t struct_id;\n\tuint8_t n_bits;\n\tuint16_t offset;\n};") || libErr != nil {
		return Tools{}, fmt.Errorf("%w in %s (run tools/build-dpdk-pna.sh with STAGES=\"swx pipelib env\" and PREFIX=%s)", ErrUnpatched, prefix, prefix)
	}
	return Tools{App: app, RTEInstallDir: dir, LibDir: lib}, nil
}

// Options configure one pipeline.
type Options struct {
	// Name tells this pipeline's interfaces, namespace and files apart
	// (a few letters and digits).
	Name string
	// Spec is the pipeline specification p4c-dpdk wrote.
	Spec string
	// Ports is the number of NIC ports: port 0 and up, as the program
	// numbers them.
	Ports int
	// Loopback, if above 0, is the port (below Ports) that loops back:
	// a ring inside the app instead of a veth, so that what the
	// pipeline sends out of it (a mirror session's copy) comes back in
	// on it. Send and Recv have no such port.
	Loopback int
	// Dir receives the generated C code, library, CLI script and log.
	Dir string
}

// Pipeline is a running pipeline app with its ports.
type Pipeline struct {
	Name string
	PID  int
	Log  string

	ns     string
	links  []string // the app's ends, in this namespace
	cmd    *exec.Cmd
	exited chan struct{}

	cliMu sync.Mutex
	cli   net.Conn
	rd    *bufio.Reader

	socks []int // the raw sockets on the namespace's ends, by port
	rx    chan Frame
}

// Frame is a frame seen on, or sent into, a port.
type Frame struct {
	Port uint32
	Data []byte
}

// PipelineName is the pipeline's name in the app.
const PipelineName = "PIPELINE0"

// Start creates the veth pairs and namespace, starts the app with its CLI
// on a loopback port, builds the pipeline from the specification and
// enables it on the app's second core. The tables are empty.
func Start(ctx context.Context, tools Tools, o Options) (p *Pipeline, err error) {
	if os.Geteuid() != 0 {
		return nil, fmt.Errorf("swx: the pipeline needs root (veths, a namespace, raw sockets)")
	}
	if o.Ports < 1 || o.Ports > 64 {
		return nil, fmt.Errorf("swx: %d ports", o.Ports)
	}
	if o.Loopback < 0 || o.Loopback >= o.Ports {
		return nil, fmt.Errorf("swx: loopback port %d of %d ports", o.Loopback, o.Ports)
	}
	p = &Pipeline{Name: o.Name, ns: "mrcswx-" + o.Name, exited: make(chan struct{}), rx: make(chan Frame, 4096)}
	defer func() {
		if err != nil {
			p.Stop()
		}
	}()
	if err := p.network(ctx, o.Ports, o.Loopback); err != nil {
		return nil, err
	}
	port, err := freePort()
	if err != nil {
		return nil, err
	}
	// The SWX pipeline wants a power-of-two number of input ports: rings
	// that nothing writes fill the rest.
	in := 1
	for in < o.Ports {
		in *= 2
	}
	var io, cli strings.Builder
	lib := filepath.Join(o.Dir, "pipeline.so")
	code := filepath.Join(o.Dir, "pipeline.c")
	fmt.Fprintf(&cli, "pipeline codegen %s %s\npipeline libbuild %s %s\n", o.Spec, code, code, lib)
	fmt.Fprintf(&cli, "mempool MEMPOOL0 buffer 2304 pool 2K cache 32 cpu 0\n")
	for i := 0; i < o.Ports; i++ {
		if isLoopback(i, o.Loopback) {
			fmt.Fprintf(&cli, "ring RING%d size 256 numa 0\n", i)
			fmt.Fprintf(&io, "port in %d ring RING%d bsz 1\n", i, i)
			continue
		}
		fmt.Fprintf(&cli, "ethdev net_af_packet%d rxq 1 128 MEMPOOL0 txq 1 128 promiscuous on\n", i)
		fmt.Fprintf(&io, "port in %d ethdev net_af_packet%d rxq 0 bsz 1\n", i, i)
	}
	for i := o.Ports; i < in; i++ {
		fmt.Fprintf(&cli, "ring RING%d size 16 numa 0\n", i)
		fmt.Fprintf(&io, "port in %d ring RING%d bsz 1\n", i, i)
	}
	for i := 0; i < o.Ports; i++ {
		if isLoopback(i, o.Loopback) {
			fmt.Fprintf(&io, "port out %d ring RING%d bsz 1\n", i, i)
			continue
		}
		fmt.Fprintf(&io, "port out %d ethdev net_af_packet%d txq 0 bsz 1\n", i, i)
	}
	ioFile := filepath.Join(o.Dir, "pipeline.io")
	if err := os.WriteFile(ioFile, []byte(io.String()), 0o644); err != nil {
		return nil, fmt.Errorf("swx: %w", err)
	}
	fmt.Fprintf(&cli, "pipeline %s build lib %s io %s numa 0\npipeline %s commit\nthread 1 pipeline %s enable\n",
		PipelineName, lib, ioFile, PipelineName, PipelineName)
	script := filepath.Join(o.Dir, "pipeline.cli")
	if err := os.WriteFile(script, []byte(cli.String()), 0o644); err != nil {
		return nil, fmt.Errorf("swx: %w", err)
	}
	// The app busy-polls on both its lcores (its CLI loop and the
	// pipeline's thread): both on the first CPU, so that a test leaves
	// the others to the programs it compares the pipeline with.
	args := []string{"--lcores", "0@0,1@0", "--no-huge", "-m", "256", "--no-pci", "--no-shconf", "--file-prefix", p.ns}
	for i, l := range p.links {
		if l != "" {
			args = append(args, fmt.Sprintf("--vdev=net_af_packet%d,iface=%s", i, l))
		}
	}
	args = append(args, "--", "-h", "127.0.0.1", "-p", strconv.Itoa(port), "-s", script)
	p.Log = filepath.Join(o.Dir, "pipeline.log")
	logf, err := os.Create(p.Log)
	if err != nil {
		return nil, fmt.Errorf("swx: %w", err)
	}
	defer logf.Close()
	p.cmd = exec.Command(tools.App, args...)
	p.cmd.Env = append(os.Environ(), "RTE_INSTALL_DIR="+tools.RTEInstallDir, "LD_LIBRARY_PATH="+tools.LibDir)
	p.cmd.Stdout, p.cmd.Stderr = logf, logf
	// Its own process group, which Stop ends; killed with the test if
	// the test dies first (a timeout skips the cleanups). The veths and
	// the namespace outlive such a death: their names carry the test's
	// PID (Options.Name), so they do not get in a later run's way.
	p.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := p.cmd.Start(); err != nil {
		return nil, fmt.Errorf("swx: start %s: %w", tools.App, err)
	}
	p.PID = p.cmd.Process.Pid
	go func() { p.cmd.Wait(); close(p.exited) }()
	if err := p.dial(ctx, port); err != nil {
		return nil, err
	}
	// The script ran before the CLI listened: the pipeline is there, or
	// the script failed.
	out, err := p.Command("pipeline " + PipelineName + " stats")
	if err != nil || !strings.Contains(out, "Input ports:") {
		return nil, fmt.Errorf("swx: the pipeline was not built (%v): %s; log %s: %s", err, strings.TrimSpace(out), p.Log, tail(p.Log))
	}
	if err := p.openSockets(o.Ports, o.Loopback); err != nil {
		return nil, err
	}
	return p, nil
}

func tail(path string) string {
	b, _ := os.ReadFile(path)
	s := strings.TrimSpace(string(b))
	if len(s) > 2000 {
		s = s[len(s)-2000:]
	}
	return s
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("swx: %w", err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

func run(ctx context.Context, name string, args ...string) error {
	out, err := exec.CommandContext(ctx, name, args...).CombinedOutput()
	if err != nil {
		return fmt.Errorf("swx: %s %s: %w: %s", name, strings.Join(args, " "), err, strings.TrimSpace(string(out)))
	}
	return nil
}

// network makes the namespace and one veth pair per port but the
// loopback (if above 0): the app's end here (sw<name><i>), the other in
// the namespace (p<i>), IPv6 off on both so that the kernel sends nothing
// of its own on them. p.links holds the app's ends by port, "" for the
// loopback.
func (p *Pipeline) network(ctx context.Context, ports, loopback int) error {
	if err := run(ctx, "ip", "netns", "add", p.ns); err != nil {
		return err
	}
	for i := 0; i < ports; i++ {
		if isLoopback(i, loopback) {
			p.links = append(p.links, "")
			continue
		}
		l := fmt.Sprintf("sw%s%d", p.Name, i)
		if len(l) > 15 {
			return fmt.Errorf("swx: interface name %s is too long: use a shorter Name", l)
		}
		peer := fmt.Sprintf("p%d", i)
		if err := run(ctx, "ip", "link", "add", l, "type", "veth", "peer", "name", peer, "netns", p.ns); err != nil {
			return err
		}
		p.links = append(p.links, l)
		for _, c := range [][]string{
			{"sysctl", "-qw", "net.ipv6.conf." + l + ".disable_ipv6=1"},
			{"ip", "netns", "exec", p.ns, "sysctl", "-qw", "net.ipv6.conf." + peer + ".disable_ipv6=1"},
			{"ip", "link", "set", l, "up"},
			{"ip", "-n", p.ns, "link", "set", peer, "up"},
		} {
			if err := run(ctx, c[0], c[1:]...); err != nil {
				return err
			}
		}
	}
	return nil
}

// openSockets opens a raw socket on each namespace end, from a thread that
// enters the namespace for that (a socket stays in the namespace it was
// made in) and then returns to its own. The thread must not die in
// between: Go ends a locked thread whose goroutine exits, and a child
// process started from it with Pdeathsig (BMv2's, this app) would be
// killed with it.
func (p *Pipeline) openSockets(ports, loopback int) error {
	errc := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		orig, err := unix.Open("/proc/thread-self/ns/net", unix.O_RDONLY|unix.O_CLOEXEC, 0)
		if err != nil {
			runtime.UnlockOSThread()
			errc <- fmt.Errorf("swx: this thread's namespace: %w", err)
			return
		}
		defer unix.Close(orig)
		fd, err := unix.Open("/run/netns/"+p.ns, unix.O_RDONLY|unix.O_CLOEXEC, 0)
		if err != nil {
			runtime.UnlockOSThread()
			errc <- fmt.Errorf("swx: open namespace %s: %w", p.ns, err)
			return
		}
		defer unix.Close(fd)
		if err := unix.Setns(fd, unix.CLONE_NEWNET); err != nil {
			runtime.UnlockOSThread()
			errc <- fmt.Errorf("swx: enter namespace %s: %w", p.ns, err)
			return
		}
		err = p.sockets(ports, loopback)
		if rerr := unix.Setns(orig, unix.CLONE_NEWNET); rerr != nil {
			// Stuck in the namespace: keep the thread (locked, parked)
			// rather than let it die or run other goroutines there.
			errc <- fmt.Errorf("swx: leave namespace %s: %w", p.ns, rerr)
			select {}
		}
		runtime.UnlockOSThread()
		errc <- err
	}()
	if err := <-errc; err != nil {
		return err
	}
	for i, s := range p.socks {
		if s >= 0 {
			go p.read(uint32(i), s)
		}
	}
	return nil
}

// sockets opens and binds the raw sockets, on the calling thread's
// namespace; the loopback port's is -1.
func (p *Pipeline) sockets(ports, loopback int) error {
	for i := 0; i < ports; i++ {
		if isLoopback(i, loopback) {
			p.socks = append(p.socks, -1)
			continue
		}
		ifi, err := net.InterfaceByName(fmt.Sprintf("p%d", i))
		if err != nil {
			return fmt.Errorf("swx: %w", err)
		}
		s, err := unix.Socket(unix.AF_PACKET, unix.SOCK_RAW|unix.SOCK_CLOEXEC, int(htons(unix.ETH_P_ALL)))
		if err != nil {
			return fmt.Errorf("swx: raw socket: %w", err)
		}
		p.socks = append(p.socks, s)
		if err := unix.Bind(s, &unix.SockaddrLinklayer{Protocol: htons(unix.ETH_P_ALL), Ifindex: ifi.Index}); err != nil {
			return fmt.Errorf("swx: bind p%d: %w", i, err)
		}
		// Receive timeouts let the readers see Stop.
		tv := unix.Timeval{Usec: 100_000}
		if err := unix.SetsockoptTimeval(s, unix.SOL_SOCKET, unix.SO_RCVTIMEO, &tv); err != nil {
			return fmt.Errorf("swx: %w", err)
		}
	}
	return nil
}

func htons(v uint16) uint16 { return v<<8 | v>>8 }

func (p *Pipeline) read(port uint32, s int) {
	buf := make([]byte, 9216)
	for {
		n, from, err := unix.Recvfrom(s, buf, 0)
		select {
		case <-p.exited:
			return
		default:
		}
		if err != nil {
			if errors.Is(err, unix.EAGAIN) || errors.Is(err, unix.EINTR) {
				continue
			}
			return
		}
		// Frames this socket sent itself come back as outgoing.
		if ll, ok := from.(*unix.SockaddrLinklayer); ok && ll.Pkttype == unix.PACKET_OUTGOING {
			continue
		}
		p.rx <- Frame{Port: port, Data: append([]byte(nil), buf[:n]...)}
	}
}

// Send puts a frame into a NIC port.
func (p *Pipeline) Send(port uint32, data []byte) error {
	if int(port) >= len(p.socks) || p.socks[port] < 0 {
		return fmt.Errorf("swx: no port %d", port)
	}
	if err := unix.Send(p.socks[port], data, 0); err != nil {
		return fmt.Errorf("swx: send %d bytes on port %d: %w", len(data), port, err)
	}
	return nil
}

// Recv waits up to d for the next frame the pipeline sends out of any port.
func (p *Pipeline) Recv(d time.Duration) (Frame, bool) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case f := <-p.rx:
		return f, true
	case <-t.C:
		return Frame{}, false
	}
}

const prompt = "pipeline> "

func (p *Pipeline) dial(ctx context.Context, port int) error {
	deadline := time.Now().Add(2 * time.Minute) // codegen and libbuild compile C first
	for {
		c, err := net.DialTimeout("tcp", fmt.Sprintf("127.0.0.1:%d", port), time.Second)
		if err == nil {
			p.cli, p.rd = c, bufio.NewReader(c)
			if _, err := p.readPrompt(); err != nil {
				return err
			}
			return nil
		}
		select {
		case <-p.exited:
			return fmt.Errorf("swx: %s exited: %s", App, tail(p.Log))
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("swx: the app's CLI did not listen on port %d: %s", port, tail(p.Log))
		}
	}
}

// readPrompt reads up to the CLI's next prompt.
func (p *Pipeline) readPrompt() (string, error) {
	p.cli.SetReadDeadline(time.Now().Add(30 * time.Second))
	var b strings.Builder
	for !strings.HasSuffix(b.String(), prompt) {
		c, err := p.rd.ReadByte()
		if err != nil {
			return b.String(), fmt.Errorf("swx: CLI: %w", err)
		}
		b.WriteByte(c)
	}
	return strings.TrimSuffix(b.String(), prompt), nil
}

// Command runs one CLI command and returns what it printed.
func (p *Pipeline) Command(cmd string) (string, error) {
	p.cliMu.Lock()
	defer p.cliMu.Unlock()
	if _, err := p.cli.Write([]byte(cmd + "\n")); err != nil {
		return "", fmt.Errorf("swx: CLI: %w", err)
	}
	out, err := p.readPrompt()
	if err != nil {
		return out, err
	}
	low := strings.ToLower(out)
	for _, bad := range []string{"error", "failed", "invalid", "not found", "mismatch"} {
		if strings.Contains(low, bad) {
			return out, fmt.Errorf("swx: %q: %s", cmd, strings.TrimSpace(out))
		}
	}
	return out, nil
}

// isLoopback reports whether port i is the loopback port (loopback above
// 0: port 0 faces the host and is never one).
func isLoopback(i, loopback int) bool { return loopback > 0 && i == loopback }

// MirrorSession sets mirror session id: a copy of the packet as the
// pipeline emits it, cut to its first truncate bytes (0: the whole
// packet), goes out of port. p4c-dpdk's mirror_packet(slot, session) names the session.
func (p *Pipeline) MirrorSession(id, port, truncate int) error {
	_, err := p.Command(fmt.Sprintf("pipeline %s mirror session %d port %d clone slow truncate %d", PipelineName, id, port, truncate))
	return err
}

// Register reads cell index of a register array of the specification
// (p4c-dpdk names a PNA register r "r_0", a packet counter c "c_0", and
// the two halves of a packets-and-bytes counter "c_0_packets" and
// "c_0_bytes").
func (p *Pipeline) Register(name string, index int) (uint64, error) {
	out, err := p.Command(fmt.Sprintf("pipeline %s regrd %s index %d", PipelineName, name, index))
	if err != nil {
		return 0, err
	}
	v, err := strconv.ParseUint(strings.TrimSpace(out), 0, 64)
	if err != nil {
		return 0, fmt.Errorf("swx: regrd %s[%d]: %q: %w", name, index, out, err)
	}
	return v, nil
}

// Counter reads a counter of the NIC schema, every cell: packets, and
// bytes when it counts them too.
func (p *Pipeline) Counter(c *schema.Counter) (packets, bytes []uint64, err error) {
	name := c.Name + "_0"
	both := c.Unit == schema.PacketsAndBytes
	packets = make([]uint64, c.Size)
	if both {
		bytes = make([]uint64, c.Size)
	}
	for i := range packets {
		if !both {
			if packets[i], err = p.Register(name, i); err != nil {
				return nil, nil, err
			}
			continue
		}
		if packets[i], err = p.Register(name+"_packets", i); err != nil {
			return nil, nil, err
		}
		if bytes[i], err = p.Register(name+"_bytes", i); err != nil {
			return nil, nil, err
		}
	}
	return packets, bytes, nil
}

// Write applies entries to their tables (add or delete) and commits them
// as one transaction.
func (p *Pipeline) Write(dir string, del bool, entries ...entry.Entry) error {
	byTable := map[string][]string{}
	var order []string
	for _, e := range entries {
		line, err := Line(e)
		if err != nil {
			return err
		}
		if _, ok := byTable[e.Table.Name]; !ok {
			order = append(order, e.Table.Name)
		}
		byTable[e.Table.Name] = append(byTable[e.Table.Name], line)
	}
	verb := "add"
	if del {
		verb = "delete"
	}
	for _, t := range order {
		f, err := os.CreateTemp(dir, "entries-*.txt")
		if err != nil {
			return fmt.Errorf("swx: %w", err)
		}
		_, werr := f.WriteString(strings.Join(byTable[t], "\n") + "\n")
		if cerr := f.Close(); werr == nil {
			werr = cerr
		}
		if werr != nil {
			return fmt.Errorf("swx: %w", werr)
		}
		out, err := p.Command(fmt.Sprintf("pipeline %s table %s %s %s", PipelineName, t, verb, f.Name()))
		os.Remove(f.Name())
		if err != nil {
			p.Command("pipeline " + PipelineName + " abort")
			return err
		}
		if strings.Contains(out, "line") {
			p.Command("pipeline " + PipelineName + " abort")
			return fmt.Errorf("swx: table %s %s: %s", t, verb, strings.TrimSpace(out))
		}
	}
	if _, err := p.Command("pipeline " + PipelineName + " commit"); err != nil {
		return err
	}
	return nil
}

// maxPriority turns P4Runtime's priorities (higher wins) into the
// pipeline's (lower wins): a wildcard table is an ACL table, whose rule
// priority is RTE_ACL_MAX_PRIORITY (2^29 - 1) less the entry's, and must
// stay at least 1 (RTE_ACL_MIN_PRIORITY) above the default rule's 0.
const maxPriority = 1<<29 - 2

// Line is entry e as a line of the pipeline's table entry text: match
// values in key order (value/mask for ternary fields), the priority of a
// ternary table's entry, the action by its local name and its parameters
// by name. p4c-dpdk keeps the P4 program's key order and local names.
func Line(e entry.Entry) (string, error) {
	if err := e.Validate(); err != nil {
		return "", fmt.Errorf("swx: %w", err)
	}
	var b strings.Builder
	b.WriteString("match")
	for i, k := range e.Table.Keys {
		switch k.Match {
		case schema.Exact:
			fmt.Fprintf(&b, " 0x%x", e.Match[i].Value)
		case schema.Ternary:
			fmt.Fprintf(&b, " 0x%x/0x%x", e.Match[i].Value, e.Match[i].Mask)
		default:
			return "", fmt.Errorf("swx: table %s: key %s: match kind %v not supported", e.Table.FullName(), k.Name, k.Match)
		}
	}
	if e.Table.NeedsPriority() {
		if e.Priority > maxPriority {
			return "", fmt.Errorf("swx: table %s: priority %d is beyond the pipeline's %d", e.Table.FullName(), e.Priority, maxPriority)
		}
		fmt.Fprintf(&b, " priority %d", maxPriority-e.Priority)
	}
	fmt.Fprintf(&b, " action %s", e.Action.Name)
	for i, prm := range e.Action.Params {
		fmt.Fprintf(&b, " %s 0x%x", prm.Name, e.Params[i])
	}
	return b.String(), nil
}

// Stop ends the app (by its process group) and removes the veths and the
// namespace.
func (p *Pipeline) Stop() error {
	var errs []error
	if p.cmd != nil && p.cmd.Process != nil {
		select {
		case <-p.exited:
		default:
			unix.Kill(-p.PID, unix.SIGTERM)
			select {
			case <-p.exited:
			case <-time.After(5 * time.Second):
				unix.Kill(-p.PID, unix.SIGKILL)
				<-p.exited
			}
		}
	} else {
		close(p.exited)
	}
	if p.cli != nil {
		p.cli.Close()
	}
	for _, s := range p.socks {
		if s >= 0 {
			unix.Close(s)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for _, l := range p.links {
		if l == "" {
			continue
		}
		if err := run(ctx, "ip", "link", "del", l); err != nil {
			errs = append(errs, err)
		}
	}
	if err := run(ctx, "ip", "netns", "del", p.ns); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}
