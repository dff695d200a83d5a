package sonic

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
)

// leaf kinds in yanglint's JSON (RFC 7951): integers of 32 bits or fewer
// are JSON numbers, 64-bit integers and everything else strings; a union
// of a number and a string is a number when the value is one.
type leafKind uint8

const (
	leafString leafKind = iota
	leafNumber
	leafNumberOrString
)

// yangList is one YANG list of a CONFIG_DB table: its name and key leaves,
// in the order of the CONFIG_DB key's "|"-separated parts.
type yangList struct {
	name string
	keys []string
}

// yangTable is how a CONFIG_DB table maps onto its YANG module.
type yangTable struct {
	module string
	// lists, by number of key parts; none for a table that is one
	// container per key (SWITCH_TRIMMING|GLOBAL).
	lists map[int]yangList
	// leaves gives the kind of every field mrcgen writes; a field not
	// listed is refused, so that the conversion never guesses.
	leaves map[string]leafKind
	// inner is set for QoS map tables: every field of a row is a pair of
	// the inner list (key leaf = field name, value leaf = field value).
	inner *innerList
}

type innerList struct {
	name, key, value   string
	keyKind, valueKind leafKind
}

var yangTables = map[string]yangTable{
	"PORT": {module: "sonic-port", lists: map[int]yangList{1: {"PORT_LIST", []string{"name"}}},
		leaves: map[string]leafKind{"alias": leafString, "lanes": leafString, "speed": leafNumber, "mtu": leafNumber,
			"admin_status": leafString, "index": leafNumber, "description": leafString, "fec": leafString, "subport": leafNumber}},
	"INTERFACE": {module: "sonic-interface", lists: map[int]yangList{
		1: {"INTERFACE_LIST", []string{"name"}}, 2: {"INTERFACE_IPPREFIX_LIST", []string{"name", "ip-prefix"}}},
		leaves: map[string]leafKind{"vrf_name": leafString, "scope": leafString, "family": leafString}},
	"SRV6_MY_LOCATORS": {module: "sonic-srv6", lists: map[int]yangList{1: {"SRV6_MY_LOCATORS_LIST", []string{"locator_name"}}},
		leaves: map[string]leafKind{"prefix": leafString, "block_len": leafNumber, "node_len": leafNumber, "func_len": leafNumber,
			"arg_len": leafNumber, "vrf": leafString}},
	"SRV6_MY_SIDS": {module: "sonic-srv6", lists: map[int]yangList{2: {"SRV6_MY_SIDS_LIST", []string{"locator", "ip_prefix"}}},
		leaves: map[string]leafKind{"action": leafString, "decap_vrf": leafString, "decap_dscp_mode": leafString}},
	"STATIC_ROUTE": {module: "sonic-static-route", lists: map[int]yangList{
		1: {"STATIC_ROUTE_TEMPLATE_LIST", []string{"prefix"}}, 2: {"STATIC_ROUTE_LIST", []string{"vrf_name", "prefix"}}},
		leaves: map[string]leafKind{"nexthop": leafString, "ifname": leafString, "advertise": leafString, "bfd": leafString,
			"distance": leafString, "nexthop-vrf": leafString, "blackhole": leafString}},
	"SWITCH_TRIMMING": {module: "sonic-trimming",
		leaves: map[string]leafKind{"size": leafNumber, "dscp_value": leafNumberOrString, "tc_value": leafNumber, "queue_index": leafNumberOrString}},
	"DSCP_TO_TC_MAP": {module: "sonic-dscp-tc-map", lists: map[int]yangList{1: {"DSCP_TO_TC_MAP_LIST", []string{"name"}}},
		inner: &innerList{name: "DSCP_TO_TC_MAP", key: "dscp", value: "tc", keyKind: leafString, valueKind: leafNumber}},
	"TC_TO_QUEUE_MAP": {module: "sonic-tc-queue-map", lists: map[int]yangList{1: {"TC_TO_QUEUE_MAP_LIST", []string{"name"}}},
		inner: &innerList{name: "TC_TO_QUEUE_MAP", key: "tc", value: "qindex", keyKind: leafNumber, valueKind: leafString}},
	"TC_TO_DSCP_MAP": {module: "sonic-tc-dscp-map", lists: map[int]yangList{1: {"TC_TO_DSCP_MAP_LIST", []string{"name"}}},
		inner: &innerList{name: "TC_TO_DSCP_MAP", key: "tc", value: "dscp", keyKind: leafNumber, valueKind: leafString}},
	"PORT_QOS_MAP": {module: "sonic-port-qos-map", lists: map[int]yangList{1: {"PORT_QOS_MAP_LIST", []string{"ifname"}}},
		leaves: map[string]leafKind{"dscp_to_tc_map": leafString, "tc_to_queue_map": leafString, "tc_to_dscp_map": leafString,
			"pfc_enable": leafString, "scheduler": leafString}},
	"BUFFER_POOL": {module: "sonic-buffer-pool", lists: map[int]yangList{1: {"BUFFER_POOL_LIST", []string{"name"}}},
		leaves: map[string]leafKind{"type": leafString, "mode": leafString, "size": leafString, "xoff": leafString}},
	"BUFFER_PROFILE": {module: "sonic-buffer-profile", lists: map[int]yangList{1: {"BUFFER_PROFILE_LIST", []string{"name"}}},
		leaves: map[string]leafKind{"pool": leafString, "size": leafString, "static_th": leafString, "dynamic_th": leafNumber,
			"packet_discard_action": leafString}},
	"BUFFER_QUEUE": {module: "sonic-buffer-queue", lists: map[int]yangList{2: {"BUFFER_QUEUE_LIST", []string{"port", "qindex"}}},
		leaves: map[string]leafKind{"profile": leafString}},
	"SCHEDULER": {module: "sonic-scheduler", lists: map[int]yangList{1: {"SCHEDULER_LIST", []string{"name"}}},
		leaves: map[string]leafKind{"type": leafString, "weight": leafNumber, "priority": leafNumber}},
	"QUEUE": {module: "sonic-queue", lists: map[int]yangList{2: {"QUEUE_LIST", []string{"ifname", "qindex"}}},
		leaves: map[string]leafKind{"scheduler": leafString, "wred_profile": leafString}},
}

// yangExtraModules are loaded for every check: the modules the tables'
// when and must conditions refer to.
var yangExtraModules = []string{"sonic-device_metadata"}

// YANGModules lists the YANG modules a check of fr loads (module names,
// without .yang), sorted.
func YANGModules(fr Fragment) []string {
	set := map[string]bool{}
	for _, m := range yangExtraModules {
		set[m] = true
	}
	for table := range fr {
		if t, ok := yangTables[table]; ok {
			set[t.module] = true
		}
	}
	out := make([]string, 0, len(set))
	for m := range set {
		out = append(out, m)
	}
	sort.Strings(out)
	return out
}

func leafValue(kind leafKind, v string) any {
	if kind != leafString {
		if n, err := strconv.ParseInt(v, 10, 64); err == nil {
			return n
		}
	}
	return v
}

// ToYANG converts a fragment into yanglint's form (RFC 7951 JSON): each
// table inside its module's top container, each row an entry of the
// table's YANG list with its key parts as key leaves, QoS map rows as inner
// lists, numbers where the model has (32-bit or smaller) integers. It
// refuses a table or field the conversion does not know rather than guess.
// Values are not checked here: that is yanglint's job.
func ToYANG(fr Fragment) ([]byte, error) {
	top := map[string]map[string]any{}
	tables := make([]string, 0, len(fr))
	for t := range fr {
		tables = append(tables, t)
	}
	sort.Strings(tables)
	for _, table := range tables {
		spec, ok := yangTables[table]
		if !ok {
			return nil, fmt.Errorf("table %s: not one mrcgen converts to YANG", table)
		}
		modKey := spec.module + ":" + spec.module
		if top[modKey] == nil {
			top[modKey] = map[string]any{}
		}
		rows := fr[table]
		keys := make([]string, 0, len(rows))
		for k := range rows {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		if spec.lists == nil { // one container per key
			c := map[string]any{}
			for _, k := range keys {
				leaves, err := spec.convertLeaves(table, k, rows[k])
				if err != nil {
					return nil, err
				}
				c[k] = leaves
			}
			top[modKey][table] = c
			continue
		}
		lists := map[string][]any{}
		for _, k := range keys {
			parts := strings.Split(k, "|")
			l, ok := spec.lists[len(parts)]
			if !ok {
				return nil, fmt.Errorf("%s|%s: a key of %d parts matches no list of %s", table, k, len(parts), spec.module)
			}
			entry := map[string]any{}
			for i, name := range l.keys {
				entry[name] = parts[i]
			}
			if in := spec.inner; in != nil {
				pairs := make([]string, 0, len(rows[k]))
				for field := range rows[k] {
					pairs = append(pairs, field)
				}
				sort.Slice(pairs, func(i, j int) bool { return natLess(pairs[i], pairs[j]) })
				var items []any
				for _, field := range pairs {
					items = append(items, map[string]any{in.key: leafValue(in.keyKind, field), in.value: leafValue(in.valueKind, rows[k][field])})
				}
				entry[in.name] = items
			} else {
				leaves, err := spec.convertLeaves(table, k, rows[k])
				if err != nil {
					return nil, err
				}
				for name, v := range leaves {
					entry[name] = v
				}
			}
			lists[l.name] = append(lists[l.name], entry)
		}
		c := map[string]any{}
		for name, items := range lists {
			c[name] = items
		}
		top[modKey][table] = c
	}
	return json.MarshalIndent(top, "", "  ")
}

func (spec yangTable) convertLeaves(table, key string, fields map[string]string) (map[string]any, error) {
	out := map[string]any{}
	for name, v := range fields {
		kind, ok := spec.leaves[name]
		if !ok {
			return nil, fmt.Errorf("%s|%s: field %q: not one mrcgen converts to YANG", table, key, name)
		}
		out[name] = leafValue(kind, v)
	}
	return out, nil
}

// natLess orders numbers by value, then anything else as text.
func natLess(a, b string) bool {
	x, errA := strconv.Atoi(a)
	y, errB := strconv.Atoi(b)
	if errA == nil && errB == nil {
		return x < y
	}
	return a < b
}

// ErrNoYanglint is returned by Yanglint when the yanglint program is not
// found.
var ErrNoYanglint = errors.New("yanglint not found on PATH (Debian/Ubuntu: apt-get install libyang2-tools)")

// Yanglint checks fragment fr against SONiC's YANG models in dir with
// yanglint: it converts fr (ToYANG), loads the modules its tables belong to
// and validates it as configuration data. The error holds yanglint's own
// message (libyang's, naming the data path and why).
func Yanglint(ctx context.Context, dir string, fr Fragment) error {
	bin, err := exec.LookPath("yanglint")
	if err != nil {
		return ErrNoYanglint
	}
	data, err := ToYANG(fr)
	if err != nil {
		return err
	}
	tmp, err := os.CreateTemp("", "mrcgen-sonic-*.json")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(data); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	args := []string{"-p", dir, "-t", "config"}
	for _, m := range YANGModules(fr) {
		path := filepath.Join(dir, m+".yang")
		if _, err := os.Stat(path); err != nil {
			return fmt.Errorf("SONiC YANG models %s: %w", dir, err)
		}
		args = append(args, path)
	}
	args = append(args, tmp.Name())
	cmd := exec.CommandContext(ctx, bin, args...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		var msgs []string
		for _, line := range strings.Split(out.String(), "\n") {
			if strings.HasPrefix(line, "libyang err") || strings.HasPrefix(line, "YANGLINT[E]") {
				msgs = append(msgs, strings.ReplaceAll(line, tmp.Name(), "fragment"))
			}
		}
		if len(msgs) == 0 {
			msgs = []string{strings.TrimSpace(out.String())}
		}
		return fmt.Errorf("yanglint: %s", strings.Join(msgs, "; "))
	}
	return nil
}
