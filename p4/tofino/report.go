package tofino

import (
	"encoding/json"
	"fmt"
	"os"
	"sort"
	"strings"

	p4cfg "github.com/p4lang/p4runtime/go/p4/config/v1"
	"google.golang.org/protobuf/proto"

	"github.com/mrc-fabric/mrcgen/p4/emit"
	"github.com/mrc-fabric/mrcgen/p4/p4infogen"
	"github.com/mrc-fabric/mrcgen/p4/schema"
)

// Report is what one compiled program takes on the chip.
type Report struct {
	Chip emit.Chip `json:"chip"`
	// Stages is the number of match-action stages of a pipe (20 on
	// Tofino2, 12 on Tofino), as the compiler reports it.
	Stages int `json:"stages"`
	// StagesUsed counts the stages that hold anything of the program.
	StagesUsed int `json:"stages_used"`
	// Totals over every stage.
	SRAMs     int `json:"srams"`
	TCAMs     int `json:"tcams"`
	MapRAMs   int `json:"map_rams"`
	HashBits  int `json:"hash_bits"`
	XbarBytes int `json:"xbar_bytes"`
	// PerStage is what each stage of the pipe holds, stage 0 first, every
	// stage of the chip listed (an empty one is free).
	PerStage []StageUsage `json:"per_stage"`
	// Tables lists, by name, everything that takes resources: the
	// program's tables, those the compiler made for its own control flow
	// (gateways, tbl_*), and the counters and registers (their SRAMs, map
	// RAMs and ALUs are charged to their own names).
	Tables []TableUsage `json:"tables"`
}

// StageUsage is what one match-action stage holds.
type StageUsage struct {
	Stage     int `json:"stage"`
	SRAMs     int `json:"srams"`
	TCAMs     int `json:"tcams"`
	MapRAMs   int `json:"map_rams"`
	HashBits  int `json:"hash_bits"`
	XbarBytes int `json:"xbar_bytes"`
	// Tables names what the stage holds, sorted.
	Tables []string `json:"tables"`
}

// TableUsage is what one table takes.
type TableUsage struct {
	Name string `json:"name"`
	// Size is the table's size as the control plane sees it (bfrt.json);
	// 0 when bfrt.json does not list the table (compiler-made tables).
	Size      int   `json:"size,omitempty"`
	Stages    []int `json:"stages"`
	SRAMs     int   `json:"srams"`
	TCAMs     int   `json:"tcams"`
	MapRAMs   int   `json:"map_rams"`
	HashBits  int   `json:"hash_bits"`
	XbarBytes int   `json:"xbar_bytes"`
}

// Table returns the usage of the table whose name is, or ends in, name
// ("SwitchIngress.usid_route" or "usid_route"), or nil.
func (r *Report) Table(name string) *TableUsage {
	for i := range r.Tables {
		if sameTable(r.Tables[i].Name, name) {
			return &r.Tables[i]
		}
	}
	return nil
}

// sameTable says whether a name the compiler gives a table names the
// control-plane table full ("SwitchIngress.usid_route"): bfrt.json prefixes
// the pipe ("pipe.SwitchIngress.usid_route"), the resource log may give the
// full or the local name.
func sameTable(got, full string) bool {
	got = strings.TrimPrefix(got, "pipe.")
	if got == full {
		return true
	}
	if i := strings.LastIndexByte(full, '.'); i >= 0 && got == full[i+1:] {
		return true
	}
	return false
}

// resources.json, as far as the report reads it (the compiler's
// compiler_interfaces/schemas/resources_schema.py).
type resourcesJSON struct {
	Resources struct {
		MAU struct {
			NStages int `json:"nStages"`
			Stages  []struct {
				Stage int `json:"stage_number"`
				Xbar  struct {
					Bytes []struct {
						Usages []usage `json:"usages"`
					} `json:"bytes"`
				} `json:"xbar_bytes"`
				HashBits struct {
					Bits []struct {
						Table string `json:"used_by_table"`
					} `json:"bits"`
				} `json:"hash_bits"`
				RAMs struct {
					SRAMs []struct {
						Usages []usage `json:"usages"`
					} `json:"srams"`
				} `json:"rams"`
				MapRAMs struct {
					MapRAMs []struct {
						Usages []usage `json:"usages"`
					} `json:"maprams"`
				} `json:"map_rams"`
				TCAMs struct {
					TCAMs []struct {
						Usages []usage `json:"usages"`
					} `json:"tcams"`
				} `json:"tcams"`
				LogicalTables struct {
					IDs []struct {
						Table string `json:"table_name"`
					} `json:"ids"`
				} `json:"logical_tables"`
			} `json:"mau_stages"`
		} `json:"mau"`
	} `json:"resources"`
}

type usage struct {
	UsedBy string `json:"used_by"`
}

// bfrtJSON is bfrt.json as far as the checks read it.
type bfrtJSON struct {
	Tables []struct {
		Name string    `json:"name"`
		Type string    `json:"table_type"`
		Size int       `json:"size"`
		Key  []bfrtKey `json:"key"`
	} `json:"tables"`
}

type bfrtKey struct {
	Name      string `json:"name"`
	MatchType string `json:"match_type"`
	Type      struct {
		Type  string `json:"type"`
		Width int    `json:"width"`
	} `json:"type"`
}

// ReadReport reads the resource report of the compilation in outDir
// (pipe/logs/resources.json, written with -g) and the table sizes from its
// bfrt.json.
func ReadReport(chip emit.Chip, outDir string) (*Report, error) {
	path, err := findFile(outDir, "resources.json")
	if err != nil {
		return nil, fmt.Errorf("resource report: %w (the compiler writes it with -g)", err)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("resource report: %w", err)
	}
	var rj resourcesJSON
	if err := json.Unmarshal(data, &rj); err != nil {
		return nil, fmt.Errorf("resource report %s: %w", path, err)
	}
	mau := rj.Resources.MAU
	if mau.NStages == 0 {
		return nil, fmt.Errorf("resource report %s: no resources.mau.nStages", path)
	}
	r := &Report{Chip: chip, Stages: mau.NStages}
	tables := map[string]*TableUsage{}
	table := func(name string) *TableUsage {
		if name == "" {
			name = "(unnamed)"
		}
		t := tables[name]
		if t == nil {
			t = &TableUsage{Name: name}
			tables[name] = t
		}
		return t
	}
	// Each unit (SRAM, TCAM, crossbar byte) counts once for every table
	// that uses it; the totals count units.
	users := func(us []usage) []*TableUsage {
		seen := map[string]bool{}
		var out []*TableUsage
		for _, u := range us {
			if !seen[u.UsedBy] {
				seen[u.UsedBy] = true
				out = append(out, table(u.UsedBy))
			}
		}
		return out
	}
	r.PerStage = make([]StageUsage, mau.NStages)
	for i := range r.PerStage {
		r.PerStage[i].Stage = i
	}
	for _, st := range mau.Stages {
		used := false
		inStage := map[*TableUsage]bool{}
		before := StageUsage{SRAMs: r.SRAMs, TCAMs: r.TCAMs, MapRAMs: r.MapRAMs, HashBits: r.HashBits, XbarBytes: r.XbarBytes}
		mark := func(t *TableUsage) {
			used = true
			inStage[t] = true
		}
		for _, b := range st.Xbar.Bytes {
			if us := users(b.Usages); len(us) > 0 {
				r.XbarBytes++
				for _, t := range us {
					t.XbarBytes++
					mark(t)
				}
			}
		}
		for _, b := range st.HashBits.Bits {
			r.HashBits++
			t := table(b.Table)
			t.HashBits++
			mark(t)
		}
		for _, s := range st.RAMs.SRAMs {
			if us := users(s.Usages); len(us) > 0 {
				r.SRAMs++
				for _, t := range us {
					t.SRAMs++
					mark(t)
				}
			}
		}
		for _, s := range st.MapRAMs.MapRAMs {
			if us := users(s.Usages); len(us) > 0 {
				r.MapRAMs++
				for _, t := range us {
					t.MapRAMs++
					mark(t)
				}
			}
		}
		for _, s := range st.TCAMs.TCAMs {
			if us := users(s.Usages); len(us) > 0 {
				r.TCAMs++
				for _, t := range us {
					t.TCAMs++
					mark(t)
				}
			}
		}
		for _, lt := range st.LogicalTables.IDs {
			mark(table(lt.Table))
		}
		for t := range inStage {
			t.Stages = append(t.Stages, st.Stage)
		}
		if used {
			r.StagesUsed++
		}
		if st.Stage < 0 || st.Stage >= mau.NStages {
			return nil, fmt.Errorf("resource report %s: stage %d of a %d-stage pipe", path, st.Stage, mau.NStages)
		}
		ps := &r.PerStage[st.Stage]
		ps.SRAMs += r.SRAMs - before.SRAMs
		ps.TCAMs += r.TCAMs - before.TCAMs
		ps.MapRAMs += r.MapRAMs - before.MapRAMs
		ps.HashBits += r.HashBits - before.HashBits
		ps.XbarBytes += r.XbarBytes - before.XbarBytes
		for t := range inStage {
			ps.Tables = append(ps.Tables, t.Name)
		}
		sort.Strings(ps.Tables)
	}
	if bf, err := readBfrt(outDir); err == nil {
		for _, bt := range bf.Tables {
			for name, t := range tables {
				if sameTable(name, strings.TrimPrefix(bt.Name, "pipe.")) {
					t.Size = bt.Size
				}
			}
		}
	}
	for _, t := range tables {
		sort.Ints(t.Stages)
		r.Tables = append(r.Tables, *t)
	}
	sort.Slice(r.Tables, func(i, j int) bool { return r.Tables[i].Name < r.Tables[j].Name })
	return r, nil
}

func readBfrt(outDir string) (*bfrtJSON, error) {
	path, err := findFile(outDir, "bfrt.json")
	if err != nil {
		return nil, err
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("bfrt.json: %w", err)
	}
	var bf bfrtJSON
	if err := json.Unmarshal(data, &bf); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return &bf, nil
}

// CheckBfrt compares the tables of the compiled program's bfrt.json with
// the schema: every schema table present, with its size, its key fields by
// name, match kind and width. It returns the differences, none when they
// agree.
func CheckBfrt(outDir string, prog *schema.Program) ([]string, error) {
	bf, err := readBfrt(outDir)
	if err != nil {
		return nil, err
	}
	var diffs []string
	for _, t := range prog.Tables {
		found := false
		for _, bt := range bf.Tables {
			if strings.TrimPrefix(bt.Name, "pipe.") != t.FullName() {
				continue
			}
			found = true
			if bt.Size < t.Size {
				diffs = append(diffs, fmt.Sprintf("table %s: size %d in bfrt.json, %d in the schema", t.FullName(), bt.Size, t.Size))
			}
			for _, k := range t.Keys {
				var bk *bfrtKey
				for i := range bt.Key {
					if bt.Key[i].Name == k.Name {
						bk = &bt.Key[i]
					}
				}
				switch {
				case bk == nil:
					diffs = append(diffs, fmt.Sprintf("table %s: no key %s in bfrt.json", t.FullName(), k.Name))
				case bk.Type.Width != k.Bits:
					diffs = append(diffs, fmt.Sprintf("table %s key %s: %d bits in bfrt.json, %d in the schema", t.FullName(), k.Name, bk.Type.Width, k.Bits))
				case !strings.EqualFold(bk.MatchType, k.Match.String()):
					diffs = append(diffs, fmt.Sprintf("table %s key %s: match %s in bfrt.json, %s in the schema", t.FullName(), k.Name, bk.MatchType, k.Match))
				}
			}
		}
		if !found {
			diffs = append(diffs, fmt.Sprintf("table %s: not in bfrt.json", t.FullName()))
		}
	}
	return diffs, nil
}

// Schema is the control-plane interface of the switch program compiled for
// chip: the switch schema, but for its register, which the Tofino programs
// hold in 32-bit cells on Tofino2 and do not have on Tofino (see the
// program's header comment).
func Schema(sw *schema.Program, chip emit.Chip) *schema.Program {
	p := *sw
	p.Registers = nil
	if chip == emit.Tofino2 {
		for _, r := range sw.Registers {
			c := *r
			for w := 8; ; w *= 2 {
				if w >= c.Bits {
					c.Bits = w
					break
				}
			}
			p.Registers = append(p.Registers, &c)
		}
	}
	return &p
}

// PipeName is the name of the Pipeline instance in the Tofino switch
// program; the compiler prefixes control-plane names with it.
const PipeName = "pipe"

// DiffP4Info compares the P4Info the compiler wrote for the switch program
// (with --p4runtime-force-std-externs) with mrcgen's for chip (Schema), and
// describes the differences, nil when they agree. Five differences are
// expected and removed first: the compiler prefixes names with the
// pipeline ("pipe.SwitchIngress.usid_route"); it names the architecture
// (pkg_info) tna or t2na rather than v1model; it names each table's
// initial default action, a field newer than the P4Info mrcgen writes and
// p4c-bm2-ss 1.2.4 matches (checked against the schema's default action,
// then dropped); it gives counters and registers IDs of its own, a hash of
// their name (TNA externs take no @id), so they are matched by name; and it
// lists the architecture's PortMetadata extern (the phase-0 table of
// per-port metadata the parser skips; mrcgen sets none). Everything else
// (table and action IDs, names, key and parameter widths, action scopes,
// sizes, counter units) must be equal.
func DiffP4Info(sw *schema.Program, chip emit.Chip, got *p4cfg.P4Info) []string {
	want := p4infogen.Build(Schema(sw, chip))
	want.PkgInfo = nil
	g := proto.Clone(got).(*p4cfg.P4Info)
	g.PkgInfo = nil
	strip := func(p *p4cfg.Preamble) {
		if p != nil {
			p.Name = strings.TrimPrefix(p.Name, PipeName+".")
		}
	}
	defaults := map[uint32]uint32{} // table ID -> default action ID
	for _, t := range sw.Tables {
		if t.Default != nil {
			defaults[t.ID] = t.Default.ID
		}
	}
	var diffs []string
	for _, t := range g.Tables {
		strip(t.Preamble)
		if a := t.GetInitialDefaultAction(); a != nil {
			if want := defaults[t.GetPreamble().GetId()]; a.GetActionId() != want {
				diffs = append(diffs, fmt.Sprintf("table %s: initial default action %#x, the schema's is %#x",
					t.GetPreamble().GetName(), a.GetActionId(), want))
			}
			t.InitialDefaultAction = nil
		}
	}
	for _, a := range g.Actions {
		strip(a.Preamble)
	}
	for _, c := range g.Counters {
		strip(c.Preamble)
	}
	for _, r := range g.Registers {
		strip(r.Preamble)
	}
	externs := g.Externs[:0]
	for _, e := range g.Externs {
		if e.GetExternTypeName() != "PortMetadata" {
			externs = append(externs, e)
		}
	}
	g.Externs = externs
	counterIDs, registerIDs := map[string]uint32{}, map[string]uint32{}
	for _, c := range want.Counters {
		counterIDs[c.GetPreamble().GetName()] = c.GetPreamble().GetId()
	}
	for _, r := range want.Registers {
		registerIDs[r.GetPreamble().GetName()] = r.GetPreamble().GetId()
	}
	for _, c := range g.Counters {
		if id, ok := counterIDs[c.GetPreamble().GetName()]; ok {
			c.Preamble.Id = id
		}
	}
	for _, r := range g.Registers {
		if id, ok := registerIDs[r.GetPreamble().GetName()]; ok {
			r.Preamble.Id = id
		}
	}
	return append(diffs, p4infogen.Diff(want, g)...)
}
