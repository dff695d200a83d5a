package nicmodel

import (
	"testing"

	"github.com/mrc-fabric/mrcgen/compiler/plan"
)

// BenchmarkHostToFabric: a host's data packets (4 KiB of payload) through
// the sending NIC (rotation, slot state, encapsulation), each followed by
// the SACK that answers it (the echo that keeps its slot GOOD): two frames
// per iteration, the figure is per frame.
func BenchmarkHostToFabric(b *testing.B) {
	a, d := plan.Host{Row: 0, Port: 0}, plan.Host{Row: 1, Port: 1}
	p, nics := tinyNICs(b, a, d)
	openPair(b, p, nics[0], nics[1], a, d, 0x11, 0x22, 0, false)
	frame := dataFrame(b, p, a, d, 0x22, 0, 4096)
	// The SACK of each slot's packet, as it comes back to the sender.
	type answer struct {
		port  uint32
		frame []byte
	}
	set := p.F.EV.SetSize
	sacks := make([]answer, set)
	for i := 0; i < set; i++ {
		out := nics[0].Process(0, frame)
		in := nics[1].Process(out[0].Port, through(out[0].AppendTo(nil)))
		for _, o := range in {
			if o.Port != 0 {
				sacks[i] = answer{o.Port, through(o.AppendTo(nil))}
			}
		}
		nics[0].Process(sacks[i].port, sacks[i].frame)
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if out := nics[0].Process(0, frame); len(out) != 1 {
			b.Fatalf("%d frames", len(out))
		}
		s := &sacks[i%set]
		if out := nics[0].Process(s.port, s.frame); len(out) != 1 {
			b.Fatalf("SACK: %d frames", len(out))
		}
	}
	b.ReportMetric(float64(2*b.N)/b.Elapsed().Seconds(), "frames/s")
}

// BenchmarkFabricToHost: data packets arriving in order at the receiving
// NIC: receive state, decapsulation to the host and the SACK (a clone).
func BenchmarkFabricToHost(b *testing.B) {
	a, d := plan.Host{Row: 0, Port: 0}, plan.Host{Row: 1, Port: 1}
	p, nics := tinyNICs(b, a, d)
	openPair(b, p, nics[0], nics[1], a, d, 0x11, 0x22, 0, false)
	out := nics[0].Process(0, dataFrame(b, p, a, d, 0x22, 0, 4096))
	frame := through(out[0].AppendTo(nil))
	psn := frame[14+40+40+8+9:]
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		v := uint32(i) & 0xffffff
		psn[0], psn[1], psn[2] = byte(v>>16), byte(v>>8), byte(v)
		if out := nics[1].Process(1, frame); len(out) != 2 {
			b.Fatalf("PSN %d: %d frames", i, len(out))
		}
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "frames/s")
}
