package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"net/netip"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/mrc-fabric/mrcgen/compiler/fabric"
	"github.com/mrc-fabric/mrcgen/compiler/plan"
)

type planOptions struct {
	fabric  fabricOptions
	json    bool
	limit   int
	section string
}

func newPlanCommand(io streams) *cobra.Command {
	var o planOptions
	cmd := &cobra.Command{
		Use:   "plan",
		Short: "Print the address plan: switch uSIDs, host addresses, links",
		Long: `plan prints the deterministic address plan of a fabric: every switch's uN uSID and
SID address, every host's address and the uDL its NIC port owns in each plane, and every
link, and the EV set every QP rotates over with each slot's same-plane backup EV. As a
table (the first --limit rows of each section) or, with --output json, in full.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			f, err := o.fabric.load()
			if err != nil {
				return err
			}
			switch o.section {
			case "all", "switches", "hosts", "links", "evs":
			default:
				return fmt.Errorf("--section %q: want all, switches, hosts, links or evs", o.section)
			}
			p := plan.New(f)
			w := bufio.NewWriterSize(io.out, 1<<16)
			defer w.Flush()
			if o.json || io.json() {
				return writePlanJSON(w, p, o.section)
			}
			writePlanTables(w, p, o.section, o.limit)
			return nil
		},
	}
	o.fabric.addFlags(cmd.Flags())
	cmd.Flags().BoolVar(&o.json, "json", false, "print the whole plan as JSON")
	_ = cmd.Flags().MarkDeprecated("json", "use --output json (-o json)")
	cmd.Flags().IntVar(&o.limit, "limit", 16, "rows per section in table output (0: all)")
	cmd.Flags().StringVar(&o.section, "section", "all", "what to print: all, switches, hosts, links or evs (the EV set and its backups)")
	return cmd
}

func sid(p *plan.Plan, u ...uint16) string {
	return netip.AddrFrom16(p.Carrier(u...)).String()
}

func writePlanTables(w *bufio.Writer, p *plan.Plan, section string, limit int) {
	f := p.F
	fmt.Fprintf(w, "fabric %q: %d planes x (%d T0 + %d T1), %d hosts, %d switches; uSID block %s, layout plane %d | kind %d | index %d bits\n",
		f.Name, f.Planes, f.T0Count, f.T1Count, f.Hosts(), f.Switches(), netip.PrefixFrom(netip.AddrFrom16(p.Carrier()), 32),
		f.USID.PlaneBits, f.USID.KindBits, f.USID.IndexBits)
	more := func(shown, total int, what string) {
		if shown < total {
			fmt.Fprintf(w, "... %d more %s (--limit 0 or -o json for all)\n", total-shown, what)
		}
	}
	capped := func(n int) int {
		if limit > 0 && n > limit {
			return limit
		}
		return n
	}
	if section == "all" || section == "switches" {
		fmt.Fprintln(w, "\nswitches")
		tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
		fmt.Fprintln(tw, "NAME\tROLE\tPLANE\tINDEX\tuSID\tSID\tPORTS")
		sw := p.Switches()
		for _, s := range sw[:capped(len(sw))] {
			fmt.Fprintf(tw, "%s\t%s\t%d\t%d\t%#04x\t%s\t%d\n", p.Name(s), s.Role, s.Plane, s.Index, p.SwitchUSID(s), sid(p, p.SwitchUSID(s)), p.Ports(s))
		}
		tw.Flush()
		more(capped(len(sw)), len(sw), "switches")
	}
	if section == "all" || section == "hosts" {
		fmt.Fprintln(w, "\nhosts (the NIC port in plane p owns block | uDL(p, port))")
		tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
		fmt.Fprintln(tw, "NAME\tADDRESS\tT0 ROW\tPORT\tPLANE 0 SID\tPLANE 0 T0")
		n := capped(f.Hosts())
		for i := 0; i < n; i++ {
			h := p.HostByIndex(i)
			fmt.Fprintf(tw, "%s\t%s\t%d\t%d\t%s\t%s\n", p.HostName(h), p.HostAddr(h), h.Row, h.Port, p.NICPortSID(0, h),
				p.Name(p.NICNeighbor(h, 0).Switch()))
		}
		tw.Flush()
		more(n, f.Hosts(), "hosts")
	}
	if section == "all" || section == "links" {
		fmt.Fprintln(w, "\nlinks")
		tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
		fmt.Fprintln(tw, "SWITCH\tPORT\tNEIGHBOUR\tPORT")
		shown, total := 0, 0
		forEachLink(p, func(s plan.Switch, port int, nb plan.Endpoint) {
			total++
			if limit > 0 && shown >= limit {
				return
			}
			shown++
			fmt.Fprintf(tw, "%s\t%d\t%s\t%d\n", p.Name(s), port, endpointName(p, nb), nb.Port)
		})
		tw.Flush()
		more(shown, total, "links")
	}
	if section == "all" || section == "evs" {
		fmt.Fprintln(w, "\nEV set (slot i: base EV, salt i; backup EV: same plane, salt set size + i)")
		tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
		fmt.Fprintln(tw, "SLOT\tPLANE\tEV\tT1\tBACKUP EV\tBACKUP T1")
		backup := p.EVBackupSet()
		n := 0
		for i, ev := range p.EVSet() {
			if limit > 0 && n >= limit {
				break
			}
			n++
			x := p.SplitEV(ev)
			bev, bt1 := "-", "-"
			if backup != nil {
				bev, bt1 = fmt.Sprintf("%#08x", uint32(backup[i])), fmt.Sprint(p.SplitEV(backup[i]).T1)
			}
			fmt.Fprintf(tw, "%d\t%d\t%#08x\t%d\t%s\t%s\n", i, x.Plane, uint32(ev), x.T1, bev, bt1)
		}
		tw.Flush()
		more(n, f.EV.SetSize, "slots")
	}
}

// forEachLink visits every switch port that is wired, in plan order: each
// T0-T1 link appears once (from its T0), each NIC link once.
func forEachLink(p *plan.Plan, visit func(s plan.Switch, port int, nb plan.Endpoint)) {
	for _, s := range p.Switches() {
		if s.Role != plan.RoleT0 {
			continue
		}
		for port := 0; port < p.Ports(s); port++ {
			if nb, ok := p.Neighbor(s, port); ok {
				visit(s, port, nb)
			}
		}
	}
}

func endpointName(p *plan.Plan, e plan.Endpoint) string {
	if e.Role == plan.RoleNIC {
		return p.HostName(p.HostByIndex(e.Index))
	}
	return p.Name(e.Switch())
}

type jsonSwitch struct {
	Name  string `json:"name"`
	Role  string `json:"role"`
	Plane int    `json:"plane"`
	Index int    `json:"index"`
	USID  string `json:"usid"`
	SID   string `json:"sid"`
	Ports int    `json:"ports"`
}

type jsonHost struct {
	Name    string   `json:"name"`
	Address string   `json:"address"`
	Row     int      `json:"row"`
	Port    int      `json:"port"`
	SIDs    []string `json:"plane_sids"`
}

type jsonEV struct {
	Slot     int    `json:"slot"`
	Plane    int    `json:"plane"`
	EV       string `json:"ev"`
	T1       int    `json:"t1"`
	BackupEV string `json:"backup_ev,omitempty"`
	BackupT1 *int   `json:"backup_t1,omitempty"`
}

type jsonLink struct {
	A     string `json:"a"`
	APort int    `json:"a_port"`
	B     string `json:"b"`
	BPort int    `json:"b_port"`
}

// writePlanJSON streams the plan as one JSON object; the largest fabric has
// millions of links, so it is written element by element.
func writePlanJSON(w *bufio.Writer, p *plan.Plan, section string) error {
	enc := func(v any) error {
		b, err := json.Marshal(v)
		if err != nil {
			return err
		}
		_, err = w.Write(b)
		return err
	}
	desc := p.F.Describe()
	w.WriteString("{\"fabric\":")
	if err := enc(struct {
		fabric.Description
		Hosts    int `json:"hosts"`
		Switches int `json:"switches"`
	}{desc, p.F.Hosts(), p.F.Switches()}); err != nil {
		return err
	}
	if section == "all" || section == "switches" {
		w.WriteString(",\n\"switches\":[")
		for i, s := range p.Switches() {
			if i > 0 {
				w.WriteString(",\n")
			}
			if err := enc(jsonSwitch{p.Name(s), s.Role.String(), s.Plane, s.Index, fmt.Sprintf("%#04x", p.SwitchUSID(s)), sid(p, p.SwitchUSID(s)), p.Ports(s)}); err != nil {
				return err
			}
		}
		w.WriteString("]")
	}
	if section == "all" || section == "hosts" {
		w.WriteString(",\n\"hosts\":[")
		for i := 0; i < p.F.Hosts(); i++ {
			h := p.HostByIndex(i)
			sids := make([]string, p.F.Planes)
			for pl := range sids {
				sids[pl] = p.NICPortSID(pl, h).String()
			}
			if i > 0 {
				w.WriteString(",\n")
			}
			if err := enc(jsonHost{p.HostName(h), p.HostAddr(h).String(), h.Row, h.Port, sids}); err != nil {
				return err
			}
		}
		w.WriteString("]")
	}
	if section == "all" || section == "links" {
		w.WriteString(",\n\"links\":[")
		first := true
		var err error
		forEachLink(p, func(s plan.Switch, port int, nb plan.Endpoint) {
			if err != nil {
				return
			}
			if !first {
				w.WriteString(",\n")
			}
			first = false
			err = enc(jsonLink{p.Name(s), port, endpointName(p, nb), nb.Port})
		})
		if err != nil {
			return err
		}
		w.WriteString("]")
	}
	if section == "all" || section == "evs" {
		w.WriteString(",\n\"evs\":[")
		backup := p.EVBackupSet()
		for i, ev := range p.EVSet() {
			if i > 0 {
				w.WriteString(",\n")
			}
			x := p.SplitEV(ev)
			e := jsonEV{Slot: i, Plane: x.Plane, EV: fmt.Sprintf("%#08x", uint32(ev)), T1: x.T1}
			if backup != nil {
				bt1 := p.SplitEV(backup[i]).T1
				e.BackupEV, e.BackupT1 = fmt.Sprintf("%#08x", uint32(backup[i])), &bt1
			}
			if err := enc(e); err != nil {
				return err
			}
		}
		w.WriteString("]")
	}
	w.WriteString("}\n")
	return nil
}
