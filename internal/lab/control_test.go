package lab

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	p4v1 "github.com/p4lang/p4runtime/go/p4/v1"

	"github.com/mrc-fabric/mrcgen/p4runtime/client"
	"github.com/mrc-fabric/mrcgen/p4runtime/p4rttest"
	"github.com/mrc-fabric/mrcgen/p4runtime/push"
)

// TestControlAndPushDoNotDemote: the control path (a runtime writer) and
// push arbitrate in different roles, so on a server that arbitrates per
// role both are primary and a push leaves the control path primary. Its
// election id is above any push's, for servers that ignore roles (PI).
func TestControlAndPushDoNotDemote(t *testing.T) {
	s := p4rttest.Start(p4rttest.Options{})
	defer s.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	cfg := controlConfig("nic-0", s.Address(), s.DeviceID())
	cfg.DialOptions = s.DialOptions()
	if cfg.ElectionID.Compare(client.ElectionID{Low: ^uint64(0)}) <= 0 {
		t.Fatalf("control election id %s is not above every push election id", cfg.ElectionID)
	}
	ctl, err := client.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer ctl.Close()
	if err := ctl.WaitPrimary(ctx); err != nil {
		t.Fatal(err)
	}
	tgt := push.Target{Name: "nic-0", Address: s.Address(), DeviceID: s.DeviceID(), ElectionID: client.ElectionID{Low: 1 << 40},
		Transport: client.Transport{Insecure: true}, DialOptions: s.DialOptions()}
	res, err := push.PushDevice(ctx, tgt, push.Desired{P4Info: p4rttest.SampleP4Info(), DeviceConfig: []byte("x"),
		Entities: p4rttest.L2Entries(1, 10)}, push.Options{})
	if err != nil || res.Inserted != 10 {
		t.Fatalf("push beside the control path: %+v, %v", res, err)
	}
	if st := ctl.Status(); !st.Primary() {
		t.Fatalf("control path demoted by the push: %+v", st)
	}
	if hi, lo, ok := s.Primary(client.RoleRuntime); !ok || hi != client.RuntimeElectionIDHigh || lo != ControlElectionID {
		t.Fatalf("runtime role primary %d:%d %v", hi, lo, ok)
	}
}

// TestWritesCounted: a Write RPC through the lab's dial options counts for
// its device, answered or not; a Read does not.
func TestWritesCounted(t *testing.T) {
	s := p4rttest.Start(p4rttest.Options{})
	defer s.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	w := writeCounters{"nic-0": new(atomic.Uint64), "nic-1": new(atomic.Uint64)}
	l := &Lab{writes: w}
	cfg := controlConfig("nic-0", s.Address(), s.DeviceID())
	cfg.DialOptions = append(s.DialOptions(), w.dialOptions("nic-0")...)
	c, err := client.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if err := c.WaitPrimary(ctx); err != nil {
		t.Fatal(err)
	}
	_ = c.Write(ctx, []*p4v1.Update{{Type: p4v1.Update_INSERT, Entity: p4rttest.L2Entries(1, 1)[0]}})
	_, _ = c.Read(ctx, []*p4v1.Entity{{Entity: &p4v1.Entity_TableEntry{TableEntry: &p4v1.TableEntry{}}}})
	if got := l.Writes(); got["nic-0"] != 1 || got["nic-1"] != 0 || len(got) != 2 {
		t.Errorf("Writes() = %v, want nic-0: 1, nic-1: 0", got)
	}
}
