package sim

import (
	"encoding/json"
	"testing"
)

// TestExactQueuesArePFCsQueues: --exact-queues runs the explicit queue of
// --pfc without PFC. On a run PFC never pauses (MRC's permutation on small,
// 2 MiB: trimming keeps every queue far below XOFF), the two must give the
// same result, field for field, but for PFC's own figures and the lossy
// run's switch buffer; and where queues overflow (RoCE's incast into
// BMv2's 64-packet ports), exact queues tail-drop as the default queue
// does, where PFC pauses instead.
func TestExactQueuesArePFCsQueues(t *testing.T) {
	f, p, src := genSource(t, "small")
	hosts, err := SpreadHosts(p, 0)
	if err != nil {
		t.Fatal(err)
	}
	flows := Permutation(hosts, 2<<20, 0, 1)
	exact := run(t, f, src, Options{Flows: flows, Seed: 1, ExactQueues: true})
	pfc := run(t, f, src, Options{Flows: flows, Seed: 1, PFC: &PFCConfig{}})
	if pfc.PFC == nil || pfc.PFC.Pauses != 0 {
		t.Fatalf("PFC %+v: want a run that pauses nothing", pfc.PFC)
	}
	if exact.PFC != nil {
		t.Errorf("exact queues report PFC %+v", exact.PFC)
	}
	if exact.SwitchBuffer == nil || pfc.SwitchBuffer != nil {
		t.Errorf("switch buffers: exact queues %+v, PFC %+v: want the lossy run's only", exact.SwitchBuffer, pfc.SwitchBuffer)
	}
	pfc.PFC, exact.SwitchBuffer = nil, nil
	exact.Run, pfc.Run = RunFigures{}, RunFigures{}
	a, _ := json.Marshal(exact)
	b, _ := json.Marshal(pfc)
	if string(a) != string(b) {
		t.Errorf("exact queues and a PFC run that never pauses differ:\n%s\n%s", a, b)
	}
	analytical := run(t, f, src, Options{Flows: flows, Seed: 1})
	analytical.Run = RunFigures{}
	if c, _ := json.Marshal(analytical); string(c) == string(a) {
		t.Errorf("exact queues give what the default queue does, byte for byte: the option changes nothing")
	}

	incast := IncastFlows(hosts[:8], 1<<20, 0)
	dropped := run(t, f, src, Options{Flows: incast, Seed: 1, Transport: RoCE, ExactQueues: true, SwitchBuffer: SwitchBufferPerPort})
	if dropped.Drops.TailDrop == 0 {
		t.Errorf("RoCE's 7-to-1 incast on exact queues of trim.queue_packets a port: no tail drop")
	}
	paused := run(t, f, src, Options{Flows: incast, Seed: 1, Transport: RoCE, PFC: &PFCConfig{}})
	if paused.Drops.TailDrop != 0 || paused.PFC.Pauses == 0 {
		t.Errorf("with PFC: %d tail drops, %d pauses; want none and some", paused.Drops.TailDrop, paused.PFC.Pauses)
	}
}
