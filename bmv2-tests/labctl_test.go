package bmv2tests

import (
	"maps"
	"testing"
	"time"

	"github.com/mrc-fabric/mrcgen/compiler/plan"
	"github.com/mrc-fabric/mrcgen/internal/lab"
	"github.com/mrc-fabric/mrcgen/internal/mrcpkt"
)

// TestLinkDownUpThroughControlServer cuts a T0-T1 link through the lab's
// control server, as `mrcgen lab link down` does, sends one EV set's worth
// of packets (one per slot, so the spray puts exactly set/(planes x T1s)
// on the cut link), and checks that those, and only those, leave p0-t0-0
// on the cut port and never reach p0-t1-0 while the rest are delivered;
// then restores the link the same way and checks every packet of a second
// set is delivered. No P4Runtime write happens along the way.
func TestLinkDownUpThroughControlServer(t *testing.T) {
	l := needLab(t)
	p := l.Build.Plan
	f := p.F
	n := f.EV.SetSize
	if n%(f.Planes*f.T1Count) != 0 {
		t.Skipf("EV set of %d does not spread evenly over %d planes x %d T1s", n, f.Planes, f.T1Count)
	}
	const a, b = "p0-t0-0", "p0-t1-0"
	cutPort, ok := l.Port(a, b)
	if !ok {
		t.Fatalf("%s and %s are not linked in this fabric", a, b)
	}
	fl := newFlow(l, plan.Host{Row: 0, Port: 0}, plan.Host{Row: 1, Port: 0}, 0x00010e)
	openQPs(t, control(t, l, fl.src), control(t, l, fl.dst), fl, 0)

	dir := t.TempDir()
	srv := lab.NewServer(l)
	if err := srv.Listen(dir); err != nil {
		t.Fatal(err)
	}
	go srv.Serve()
	t.Cleanup(func() { srv.Close() })
	c, err := lab.Dial(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ctx := ctxFor(t, 60*time.Second)
	setLink := func(up bool) {
		t.Helper()
		if err := c.Call(ctx, "link", lab.LinkRequest{A: a, B: b, Up: up}, nil); err != nil {
			t.Fatal(err)
		}
	}
	t.Cleanup(func() { _ = l.SetLink(ctxFor(t, 10*time.Second), a, b, true) })
	if err := c.Call(ctx, "link", lab.LinkRequest{A: a, B: "p0-t0-1"}, nil); err == nil {
		t.Errorf("link %s:p0-t0-1 (not neighbours) accepted", a)
	}

	writes := l.Writes()
	l.ResetCaptures()
	cutBefore := l.Stats().CutDrops
	setLink(false)
	fl.send(t, 0, uint32(n), 0, nil)

	// ours returns the PSNs of our data packets among frames.
	ours := func(frames []lab.Frame, keep func(lab.Frame) bool) map[uint32]bool {
		out := map[uint32]bool{}
		for _, fr := range frames {
			if !keep(fr) {
				continue
			}
			if pk, err := mrcpkt.Parse(fr.Data); err == nil && mrcpkt.IsData(pk.BTH.Opcode) && pk.BTH.DstQP == fl.qp {
				out[pk.BTH.PSN] = true
			}
		}
		return out
	}
	var delivered, onCut map[uint32]bool
	waitFor(t, 30*time.Second, "not every packet was delivered or sent onto the cut link", func() bool {
		delivered = ours(l.HostFrames(fl.dst), func(lab.Frame) bool { return true })
		onCut = ours(l.Trace(), func(fr lab.Frame) bool { return fr.Device == a && fr.Port == cutPort })
		return len(delivered)+len(onCut) >= n
	})

	if want := n / (f.Planes * f.T1Count); len(onCut) != want {
		t.Errorf("%d packets sent onto the cut link %s:%s, want %d", len(onCut), a, b, want)
	}
	for psn := range onCut {
		if delivered[psn] {
			t.Errorf("PSN %d crossed the cut link and was delivered", psn)
		}
	}
	atB := ours(l.Trace(), func(fr lab.Frame) bool { return fr.Device == b })
	for psn := range onCut {
		if atB[psn] {
			t.Errorf("PSN %d reached %s across the cut link", psn, b)
		}
	}
	if d := l.Stats().CutDrops - cutBefore; d < uint64(len(onCut)) {
		t.Errorf("lab counted %d cut drops, want at least %d", d, len(onCut))
	}

	setLink(true)
	cutBefore = l.Stats().CutDrops
	first := len(delivered)
	fl.send(t, uint32(n), uint32(n), 0, nil)
	frames, err := l.WaitHostFrames(ctx, fl.dst, first+n)
	if err != nil {
		t.Fatal(err)
	}
	if got := ours(frames, func(lab.Frame) bool { return true }); len(got) != first+n {
		t.Errorf("after link up: %d distinct PSNs delivered, want %d", len(got), first+n)
	}
	if d := l.Stats().CutDrops - cutBefore; d != 0 {
		t.Errorf("%d cut drops after the link came up", d)
	}
	if after := l.Writes(); !maps.Equal(writes, after) {
		t.Errorf("P4Runtime writes during the link changes: before %v, after %v", writes, after)
	}
}
