package main

import (
	"bytes"
	"encoding/xml"
	"errors"
	"io"
	"os"
	"testing"

	"github.com/mrc-fabric/mrcgen/compiler/artifacts"
	"github.com/mrc-fabric/mrcgen/compiler/fabric"
	"github.com/mrc-fabric/mrcgen/compiler/plan"
	"github.com/mrc-fabric/mrcgen/internal/chart"
	"github.com/mrc-fabric/mrcgen/internal/lab"
	"github.com/mrc-fabric/mrcgen/p4/schema"
)

// TestAggregateCounters feeds tiny's devices made-up counters and checks the
// sums: plane_tx and slot_tx over the NICs, T0 up-port data per (plane, T1),
// trimmed per port, NACK events, drop reasons.
func TestAggregateCounters(t *testing.T) {
	f, err := fabric.FromPreset("tiny")
	if err != nil {
		t.Fatal(err)
	}
	p := plan.New(f)
	var devs []lab.DeviceCounters
	for _, s := range p.Switches() {
		d := lab.DeviceCounters{Name: p.Name(s), Device: artifacts.Device{Name: p.Name(s), Role: s.Role.String()},
			Counters: map[string][]lab.Cell{schema.SwitchTxCounter: make([]lab.Cell, 64), schema.SwitchDropCounter: make([]lab.Cell, schema.DropReasons)}}
		if s.Role == plan.RoleT0 {
			for t1 := 0; t1 < f.T1Count; t1++ {
				// 100 * plane + 10 * row + t1 data packets up to T1 t1.
				d.Counters[schema.SwitchTxCounter][p.T0UpPort(t1)*schema.PortClasses+schema.ClassData].Packets = int64(100*s.Plane + 10*s.Index + t1)
			}
		}
		if p.Name(s) == "p0-t1-1" {
			d.Counters[schema.SwitchTxCounter][1*schema.PortClasses+schema.ClassTrimmed].Packets = 7
			d.Counters[schema.SwitchDropCounter][schema.DropRouteMiss].Packets = 2
		}
		devs = append(devs, d)
	}
	for h := 0; h < f.Hosts(); h++ {
		name := p.HostName(p.HostByIndex(h))
		d := lab.DeviceCounters{Name: name, Device: artifacts.Device{Name: name, Role: "nic"}, Counters: map[string][]lab.Cell{
			schema.NICPlaneTx: make([]lab.Cell, schema.NICMaxPlanes), schema.NICSlotTx: make([]lab.Cell, f.EV.SetSize),
			schema.NICEventCounter: make([]lab.Cell, schema.NICEventCount)}}
		for i := range d.Counters[schema.NICSlotTx] {
			d.Counters[schema.NICSlotTx][i].Packets = int64(h + 1)
			d.Counters[schema.NICPlaneTx][i%f.Planes].Packets += int64(h + 1)
			d.Counters[schema.NICPlaneTx][i%f.Planes].Bytes += 100
		}
		if h == 3 {
			d.Counters[schema.NICEventCounter][schema.NICEventTrimmedRx].Packets = 7
			d.Counters[schema.NICEventCounter][schema.NICEventNackRx].Packets = 1
		}
		if h == 0 {
			// nic-0 retired slot 2 twice and sent 5 packets on its backup.
			ev := d.Counters[schema.NICEventCounter]
			ev[schema.NICEventPathFailed].Packets, ev[schema.NICEventBackupTaken].Packets = 2, 5
			ev[schema.NICEventProbeSent].Packets, ev[schema.NICEventRevived].Packets = 3, 1
			d.Counters[schema.NICSlotFailed] = make([]lab.Cell, f.EV.SetSize)
			d.Counters[schema.NICSlotBackupTx] = make([]lab.Cell, f.EV.SetSize)
			d.Counters[schema.NICSlotFailed][2].Packets, d.Counters[schema.NICSlotBackupTx][2].Packets = 2, 5
		}
		devs = append(devs, d)
	}
	c := aggregate(p, devs)
	// Per NIC 16 slots, 8 per plane, of h+1 packets: (1+2+3+4) * 8 = 80.
	for _, x := range c.Planes {
		if x.Packets != 80 || x.Bytes != 4*8*100 {
			t.Errorf("plane %+v", x)
		}
	}
	for _, x := range c.Slots {
		failed, backup := int64(0), int64(0)
		if x.Slot == 2 {
			failed, backup = 2, 5
		}
		if x.Packets != 10 || x.Failed != failed || x.OnBackup != backup {
			t.Errorf("slot %+v", x)
		}
	}
	if want := (nicPathCount{Device: "nic-0", Failed: 2, BackupSends: 5, ProbesSent: 3, Revived: 1}); len(c.Paths) != 1 || c.Paths[0] != want {
		t.Errorf("paths %+v, want only %+v", c.Paths, want)
	}
	// (plane, T1): the two rows' counts: 100p + 0 + t1 + 100p + 10 + t1.
	for _, x := range c.PlaneT1 {
		if want := int64(200*x.Plane + 10 + 2*x.T1); x.Packets != want {
			t.Errorf("%+v, want %d", x, want)
		}
	}
	if len(c.Trims) != 1 || c.Trims[0] != (portCount{Device: "p0-t1-1", Port: 1, Trimmed: 7}) {
		t.Errorf("trims %+v", c.Trims)
	}
	if len(c.NACKs) != 1 || c.NACKs[0].Device != "nic-3" || c.NACKs[0].Sent != 7 || c.NACKs[0].Received != 1 {
		t.Errorf("NACKs %+v", c.NACKs)
	}
	if len(c.Drops) != 1 || c.Drops[0] != (dropCount{Device: "p0-t1-1", Reason: "route miss", Packets: 2}) {
		t.Errorf("drops %+v", c.Drops)
	}
	// The picture: one bar per plane, (plane, T1), slot, trimmed port, NIC
	// with NACKs and drop.
	doc := chart.Render(c.histograms(p))
	dec := xml.NewDecoder(bytes.NewReader(doc))
	bars := 0
	for {
		tok, err := dec.Token()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		if el, ok := tok.(xml.StartElement); ok {
			for _, a := range el.Attr {
				if a.Name.Local == "class" && a.Value == chart.ClassBar {
					bars++
				}
			}
		}
	}
	if want := 2 + 4 + 16 + 1 + 1 + 1; bars != want {
		t.Errorf("%d bars, want %d", bars, want)
	}
	_ = writeFileForLook(t, doc)
}

// writeFileForLook keeps the picture when MRCGEN_KEEP_SVG names a file, to
// look at it.
func writeFileForLook(t *testing.T, doc []byte) error {
	if path := os.Getenv("MRCGEN_KEEP_SVG"); path != "" {
		return replaceFiles(map[string][]byte{path: doc})
	}
	return nil
}
