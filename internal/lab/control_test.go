package lab

import (
	"context"
	"testing"
	"time"

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
