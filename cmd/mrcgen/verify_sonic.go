package main

import (
	"fmt"

	"github.com/mrc-fabric/mrcgen/compiler/sonic"
)

// openSonicForVerify opens the SONiC export `verify --sonic DIR` proves: the
// switches' uN SIDs and static routes come from their config_db.json
// fragments (interface names mapped to ports by the export's lane map),
// the NICs' tables from the generator (SONiC configures no NIC).
func openSonicForVerify(o verifyOptions) (*sonic.Export, error) {
	if o.build != "" || o.fabric.file != "" || o.fabric.preset != "" {
		return nil, fmt.Errorf("give --sonic, --build or --fabric/--preset, not several")
	}
	return sonic.Open(o.sonic)
}

// printSonicBlame names, after a failed proof of a SONiC export, the
// CONFIG_DB keys that differ from the plan.
func printSonicBlame(io streams, e *sonic.Export) {
	if e == nil {
		return
	}
	blame := e.Blame()
	if len(blame) == 0 {
		return
	}
	fmt.Fprintf(io.errOut, "\nSONiC entries that differ from the plan (%d):\n", len(blame))
	for i, b := range blame {
		if i == 40 {
			fmt.Fprintf(io.errOut, "  ... %d more\n", len(blame)-i)
			break
		}
		fmt.Fprintf(io.errOut, "  %s\n", b)
	}
}
