package lab

import (
	"context"
	"fmt"
	"strconv"

	p4v1 "github.com/p4lang/p4runtime/go/p4/v1"
	"google.golang.org/grpc"

	"github.com/mrc-fabric/mrcgen/p4/schema"
	"github.com/mrc-fabric/mrcgen/p4runtime/client"
	"github.com/mrc-fabric/mrcgen/tables/entry"
	"github.com/mrc-fabric/mrcgen/tables/qpentry"
)

// ControlElectionID is the low word of the election id of the lab's control
// path (the failover controller of the tests, a runtime writer of ev_state
// and qp_send, qp_recv): it arbitrates in client.RoleRuntime with an election id
// in the runtime range (client.RuntimeElectionID), apart from push's role
// and range. On BMv2, whose P4Runtime server (PI) ignores roles, that range
// keeps it primary whatever election id a targets file gives push.
const ControlElectionID = 100

// controlConfig is the client configuration of the control path.
func controlConfig(device, addr string, deviceID uint64) client.Config {
	return client.Config{Name: device, Address: addr, DeviceID: deviceID, Role: client.RoleRuntime,
		ElectionID: client.RuntimeElectionID(ControlElectionID), Transport: client.Transport{Insecure: true}}
}

// Control is a P4Runtime session with one device of the lab, for what tests
// do at run time: read counters, write runtime tables.
type Control struct {
	Device string
	Prog   *schema.Program
	c      *client.Client
	// t1Count bounds the T1 offset of the QPs opened through it (the NIC
	// program adds the offset with one subtraction, modulo the T1 count).
	t1Count int
}

// Control opens a primary P4Runtime session with a device.
func (l *Lab) Control(ctx context.Context, device string) (*Control, error) {
	d, ok := l.Devices[device]
	if !ok {
		return nil, fmt.Errorf("lab: no device %q", device)
	}
	return DialControl(ctx, device, d.Switch.GRPCAddr, d.Switch.DeviceID, l.Build.ProgramFor(d.Program), l.Build.Plan.F.T1Count,
		l.writes.dialOptions(device)...)
}

// DialControl opens a primary P4Runtime session, on the lab's control path, with a
// switch running prog (of a fabric with t1Count T1s per plane) at addr: a
// lab's device, or a switch a test runs on its own.
func DialControl(ctx context.Context, device, addr string, deviceID uint64, prog *schema.Program, t1Count int, opts ...grpc.DialOption) (*Control, error) {
	cfg := controlConfig(device, addr, deviceID)
	cfg.DialOptions = opts
	c, err := client.New(cfg)
	if err != nil {
		return nil, err
	}
	if err := c.WaitPrimary(ctx); err != nil {
		c.Close()
		return nil, err
	}
	return &Control{Device: device, Prog: prog, c: c, t1Count: t1Count}, nil
}

// Close ends the session.
func (c *Control) Close() error { return c.c.Close() }

// Counter reads one cell of an indexed counter.
func (c *Control) Counter(ctx context.Context, name string, index int) (packets, bytes int64, err error) {
	cnt := c.Prog.Counter(name)
	if cnt == nil {
		return 0, 0, fmt.Errorf("%s: no counter %s", c.Device, name)
	}
	out, err := c.c.Read(ctx, []*p4v1.Entity{{Entity: &p4v1.Entity_CounterEntry{CounterEntry: &p4v1.CounterEntry{
		CounterId: cnt.ID, Index: &p4v1.Index{Index: int64(index)}}}}})
	if err != nil {
		return 0, 0, err
	}
	if len(out) != 1 {
		return 0, 0, fmt.Errorf("%s: counter %s[%d]: %d answers", c.Device, name, index, len(out))
	}
	d := out[0].GetCounterEntry().GetData()
	return d.GetPacketCount(), d.GetByteCount(), nil
}

// Counters reads every cell of an indexed counter (packets).
func (c *Control) Counters(ctx context.Context, name string) ([]int64, error) {
	cells, err := c.Cells(ctx, name)
	if err != nil {
		return nil, err
	}
	out := make([]int64, len(cells))
	for i, cell := range cells {
		out[i] = cell.Packets
	}
	return out, nil
}

// Cells reads every cell of an indexed counter, packets and bytes.
func (c *Control) Cells(ctx context.Context, name string) ([]Cell, error) {
	cnt := c.Prog.Counter(name)
	if cnt == nil {
		return nil, fmt.Errorf("%s: no counter %s", c.Device, name)
	}
	out, err := c.c.Read(ctx, []*p4v1.Entity{{Entity: &p4v1.Entity_CounterEntry{CounterEntry: &p4v1.CounterEntry{CounterId: cnt.ID}}}})
	if err != nil {
		return nil, err
	}
	cells := make([]Cell, cnt.Size)
	for _, e := range out {
		ce := e.GetCounterEntry()
		if i := ce.GetIndex().GetIndex(); i >= 0 && int(i) < len(cells) {
			cells[i] = Cell{Packets: ce.GetData().GetPacketCount(), Bytes: ce.GetData().GetByteCount()}
		}
	}
	return cells, nil
}

// Write sends entries with one update type.
func (c *Control) Write(ctx context.Context, typ p4v1.Update_Type, entries ...entry.Entry) error {
	updates := make([]*p4v1.Update, len(entries))
	for i := range entries {
		if err := entries[i].Validate(); err != nil {
			return fmt.Errorf("%s: %w", c.Device, err)
		}
		updates[i] = &p4v1.Update{Type: typ, Entity: entries[i].Proto()}
	}
	return c.c.Write(ctx, updates)
}

// Entry builds an entry of this device's program by table and action name.
func (c *Control) Entry(table, action string, match []entry.Match, params ...uint64) (entry.Entry, error) {
	return qpentry.Make(c.Prog, table, action, match, params...)
}

// SetQueueRate throttles a switch port to pps packets per second through
// BMv2's thrift CLI (P4Runtime has no such call); pps 0 restores it.
func (l *Lab) SetQueueRate(ctx context.Context, device string, port uint32, pps int) error {
	d, ok := l.Devices[device]
	if !ok {
		return fmt.Errorf("lab: no device %q", device)
	}
	cmd := "set_queue_rate " + strconv.Itoa(pps) + " " + strconv.Itoa(int(port))
	if pps == 0 {
		cmd = "set_queue_rate 1000000000 " + strconv.Itoa(int(port))
	}
	_, err := d.Switch.CLI(ctx, l.Tools, cmd)
	return err
}
