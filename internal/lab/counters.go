package lab

import (
	"context"
	"fmt"

	p4v1 "github.com/p4lang/p4runtime/go/p4/v1"

	"github.com/mrc-fabric/mrcgen/compiler/artifacts"
	"github.com/mrc-fabric/mrcgen/p4runtime/client"
)

// Cell is one cell of an indexed counter.
type Cell struct {
	Packets, Bytes int64
}

// DeviceCounters are every counter of one device, by full name, cell by
// cell.
type DeviceCounters struct {
	Name     string
	Device   artifacts.Device
	Counters map[string][]Cell
}

// ReadCounters reads every counter of every device of the lab recorded in
// st over P4Runtime (a Read needs no arbitration, so a running controller
// is not disturbed), in the build's device order.
func ReadCounters(ctx context.Context, st *State, b *artifacts.Build) ([]DeviceCounters, error) {
	addr := map[string]string{}
	for _, d := range st.Devices {
		addr[d.Name] = d.GRPC
	}
	var out []DeviceCounters
	for _, d := range b.Manifest.Devices {
		a, ok := addr[d.Name]
		if !ok {
			return nil, fmt.Errorf("lab %s has no device %s of build %s", st.ID, d.Name, b.Dir)
		}
		c, err := client.New(client.Config{Name: d.Name, Address: a, DeviceID: 1, ReadOnly: true, Transport: client.Transport{Insecure: true}})
		if err != nil {
			return nil, err
		}
		dc := DeviceCounters{Name: d.Name, Device: d, Counters: map[string][]Cell{}}
		for _, cnt := range b.ProgramFor(d.Program).Counters {
			ents, err := c.Read(ctx, []*p4v1.Entity{{Entity: &p4v1.Entity_CounterEntry{CounterEntry: &p4v1.CounterEntry{CounterId: cnt.ID}}}})
			if err != nil {
				c.Close()
				return nil, fmt.Errorf("%s: counter %s: %w", d.Name, cnt.FullName(), err)
			}
			cells := make([]Cell, cnt.Size)
			for _, e := range ents {
				ce := e.GetCounterEntry()
				if i := ce.GetIndex().GetIndex(); i >= 0 && int(i) < len(cells) {
					cells[i] = Cell{ce.GetData().GetPacketCount(), ce.GetData().GetByteCount()}
				}
			}
			dc.Counters[cnt.FullName()] = cells
		}
		c.Close()
		out = append(out, dc)
	}
	return out, nil
}
