// Package schema is the one definition of the control-plane interface of
// mrcgen's P4 programs: every table, key field, action, parameter, counter
// and register, with its P4Runtime ID, name and width. The table generator
// builds entries from it, the P4 emitter writes the @id/@name annotations
// and declarations from it, and the P4Info is produced from it, so the three
// cannot drift apart.
package schema

// ID prefixes of P4Info objects (the top byte of every ID), as p4c assigns
// them.
const (
	PrefixAction        = 0x01
	PrefixTable         = 0x02
	PrefixCounter       = 0x12
	PrefixDirectCounter = 0x13
	PrefixRegister      = 0x16
)

// MatchKind is how a key field is matched.
type MatchKind int

// Match kinds used by mrcgen's programs.
const (
	Exact MatchKind = iota + 1
	Ternary
	LPM
)

func (m MatchKind) String() string {
	switch m {
	case Exact:
		return "exact"
	case Ternary:
		return "ternary"
	case LPM:
		return "lpm"
	}
	return "unknown"
}

// Field is a table key field.
type Field struct {
	ID    uint32
	Name  string // control-plane name (@name)
	Bits  int
	Match MatchKind
	// Expr is the P4 expression the key reads.
	Expr string
}

// Param is an action parameter.
type Param struct {
	ID   uint32
	Name string
	Bits int
}

// Action is a P4 action declared inside a control.
type Action struct {
	ID      uint32
	Control string // the control that declares it
	Name    string // local name
	Params  []Param
	// Internal actions are called by the program's own control flow (they
	// group register accesses under one BMv2 lock); no table holds them,
	// but p4c lists them in the P4Info all the same.
	Internal bool
}

// FullName is the fully qualified control-plane name, as in the P4Info.
func (a *Action) FullName() string { return a.Control + "." + a.Name }

// Param returns the parameter with the given name, or nil.
func (a *Action) Param(name string) *Param {
	for i := range a.Params {
		if a.Params[i].Name == name {
			return &a.Params[i]
		}
	}
	return nil
}

// Scope says where an action may be used in a table.
type Scope int

// Action scopes, as in the P4Info ActionRef.
const (
	TableAndDefault Scope = iota
	TableOnly
	DefaultOnly
)

// ActionRef is an action a table may hold.
type ActionRef struct {
	Action *Action
	Scope  Scope
}

// Owner says who writes a table's entries.
type Owner int

// Table owners.
const (
	// OwnerBuild tables hold what `mrcgen build` computes; `mrcgen push`
	// makes the device hold exactly that.
	OwnerBuild Owner = iota
	// OwnerRuntime tables are written at run time (QPs, EV state set by the
	// failover controller); a push leaves their entries alone.
	OwnerRuntime
)

// Table is a match-action table.
type Table struct {
	ID      uint32
	Control string
	Name    string
	Keys    []Field
	Actions []ActionRef
	// Default is the default action (no parameters).
	Default *Action
	Size    int
	Owner   Owner
	// Doc explains the table in the generated P4.
	Doc string
}

// FullName is the fully qualified control-plane name, as in the P4Info.
func (t *Table) FullName() string { return t.Control + "." + t.Name }

// Key returns the key field with the given name, or nil.
func (t *Table) Key(name string) *Field {
	for i := range t.Keys {
		if t.Keys[i].Name == name {
			return &t.Keys[i]
		}
	}
	return nil
}

// NeedsPriority reports whether entries of the table carry a priority
// (tables with ternary or range keys).
func (t *Table) NeedsPriority() bool {
	for _, k := range t.Keys {
		if k.Match == Ternary {
			return true
		}
	}
	return false
}

// CounterUnit is what a counter counts.
type CounterUnit int

// Counter units.
const (
	Packets CounterUnit = iota + 1
	Bytes
	PacketsAndBytes
)

// Counter is an indexed counter array.
type Counter struct {
	ID      uint32
	Control string // "" for a top-level instance
	Name    string
	Size    int
	Unit    CounterUnit
	Doc     string
}

// FullName is the fully qualified control-plane name.
func (c *Counter) FullName() string {
	if c.Control == "" {
		return c.Name
	}
	return c.Control + "." + c.Name
}

// Register is a register array. BMv2's P4Runtime server cannot read or write
// registers: they hold dataplane state only.
type Register struct {
	ID      uint32
	Control string // "" for a top-level instance
	Name    string
	Size    int
	Bits    int
	Doc     string
}

// FullName is the fully qualified control-plane name.
func (r *Register) FullName() string {
	if r.Control == "" {
		return r.Name
	}
	return r.Control + "." + r.Name
}

// Program is the control-plane interface of one P4 program.
type Program struct {
	Name      string
	Tables    []*Table
	Actions   []*Action
	Counters  []*Counter
	Registers []*Register
}

// Table returns the table with the given full name, or nil.
func (p *Program) Table(fullName string) *Table {
	for _, t := range p.Tables {
		if t.FullName() == fullName {
			return t
		}
	}
	return nil
}

// TableByID returns the table with the given ID, or nil.
func (p *Program) TableByID(id uint32) *Table {
	for _, t := range p.Tables {
		if t.ID == id {
			return t
		}
	}
	return nil
}

// ActionByID returns the action with the given ID, or nil.
func (p *Program) ActionByID(id uint32) *Action {
	for _, a := range p.Actions {
		if a.ID == id {
			return a
		}
	}
	return nil
}

// Counter returns the counter with the given full name, or nil.
func (p *Program) Counter(fullName string) *Counter {
	for _, c := range p.Counters {
		if c.FullName() == fullName {
			return c
		}
	}
	return nil
}
