package protocol_test

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/pulsarsim/pulsarsim/protocol/pb"
)

// upstreamProtoPath is where pulsar-client-go keeps its copy of Pulsar's
// PulsarApi.proto, relative to the module folder.
const upstreamProtoPath = "pulsar/internal/pulsar_proto/PulsarApi.proto"

// newerThanUpstream lists the fields of our schema that the PulsarApi.proto
// inside pulsar-client-go v0.19.0 predates: Pulsar 4.0 brokers have them, the
// Go client's copy does not. Each must keep its number; anything else of ours
// that upstream lacks is drift.
var newerThanUpstream = map[string]int32{
	// Pulsar 4.0 (PIP-344): the client can ask for partitioned metadata
	// without creating the topic.
	"FeatureFlags.supports_get_partitioned_metadata_without_auto_creation": 5,
	"CommandPartitionedTopicMetadata.metadata_auto_creation_enabled":       6,
	// Pulsar 2.11 and later: a consumer with an AUTO_CONSUME schema says
	// so, and the broker skips the schema check for it. An enum value;
	// its key is the enum's name, a dot and the value's name.
	"Schema.Type.AutoConsume": 21,
}

// typeStandIns lists fields whose message type we replace on purpose: our
// type's simple name, then upstream's. None today (the transaction commands
// used to share one stand-in that read only their request_id).
var typeStandIns = map[string][2]string{}

// schemaAllowances are the documented, deliberate differences.
type schemaAllowances struct {
	newer     map[string]int32
	standIns  map[string][2]string
	sawNewer  map[string]bool // filled by compareSchemas: entries still needed
	staleNote []string        // allowances upstream has caught up with
}

func defaultAllowances() *schemaAllowances {
	return &schemaAllowances{newer: newerThanUpstream, standIns: typeStandIns, sawNewer: map[string]bool{}}
}

// compareSchemas lists every way in which ours differs from upstream, for
// the messages and enums both have. Matching is by name qualified by parent
// messages. Defaults are compared as the value a reader sees when the field
// is absent, so "[default = 0]" on an int field equals no default at all.
func compareSchemas(ours, upstream *protoSchema, allow *schemaAllowances) []string {
	var diffs []string
	add := func(format string, args ...any) { diffs = append(diffs, fmt.Sprintf(format, args...)) }

	for _, name := range sortedKeys(ours.Messages) {
		om := ours.Messages[name]
		um, ok := upstream.Messages[name]
		if !ok {
			continue // a message of our own; its uses are checked below
		}
		for _, of := range om.Fields {
			key := name + "." + of.Name
			uf := um.field(of.Name)
			if uf == nil {
				if n, ok := allow.newer[key]; ok {
					allow.sawNewer[key] = true
					if n != of.Number {
						add("%s: allow-listed as newer than upstream with number %d, but ours is %d", key, n, of.Number)
					}
					continue
				}
				if other := um.fieldByNumber(of.Number); other != nil {
					add("%s = %d: upstream has no field of that name; its field %d is %q", key, of.Number, of.Number, other.Name)
				} else {
					add("%s = %d: upstream has no such field", key, of.Number)
				}
				continue
			}
			if _, ok := allow.newer[key]; ok {
				allow.staleNote = append(allow.staleNote, key)
			}
			if of.Number != uf.Number {
				add("%s: number %d, upstream %d", key, of.Number, uf.Number)
			}
			if of.Label != uf.Label {
				add("%s: label %s, upstream %s", key, of.Label, uf.Label)
			}
			if of.Type != uf.Type {
				si, ok := allow.standIns[key]
				if !ok || of.Type != "message "+si[0] || uf.Type != "message "+si[1] {
					add("%s: type %s, upstream %s", key, of.Type, uf.Type)
				}
				continue // defaults of different types do not compare
			}
			if of.Default != uf.Default {
				add("%s: default %q, upstream %q", key, of.Default, uf.Default)
			}
		}
	}
	for _, name := range sortedKeys(ours.Enums) {
		oe := ours.Enums[name]
		ue, ok := upstream.Enums[name]
		if !ok {
			add("enum %s: upstream has no enum of that name", name)
			continue
		}
		for _, v := range oe.Values {
			n, ok := ue.value(v.Name)
			key := name + "." + v.Name
			if want, newer := allow.newer[key]; !ok && newer {
				allow.sawNewer[key] = true
				if want != v.Number {
					add("%s: allow-listed as newer than upstream with number %d, but ours is %d", key, want, v.Number)
				}
				continue
			}
			switch {
			case !ok:
				add("enum %s: value %s = %d missing upstream", name, v.Name, v.Number)
			case n != v.Number:
				add("enum %s: value %s = %d, upstream %d", name, v.Name, v.Number, n)
			}
		}
	}
	return diffs
}

// upstreamProto returns the text of PulsarApi.proto from the pulsar-client-go
// module this repository depends on.
func upstreamProto(t *testing.T) (string, string) {
	t.Helper()
	goTool, err := exec.LookPath("go")
	if err != nil {
		t.Skipf("the go command is not on PATH, so the pulsar-client-go module folder cannot be found: %v", err)
	}
	cmd := exec.Command(goTool, "list", "-m", "-f", "{{.Dir}}", "github.com/apache/pulsar-client-go")
	cmd.Dir = ".." // the repository root
	out, err := cmd.Output()
	if err != nil {
		var stderr string
		if ee, ok := err.(*exec.ExitError); ok {
			stderr = string(ee.Stderr)
		}
		t.Fatalf("go list -m github.com/apache/pulsar-client-go: %v\n%s", err, stderr)
	}
	dir := strings.TrimSpace(string(out))
	if dir == "" {
		t.Fatal("go list gave no folder for github.com/apache/pulsar-client-go; run `go mod download github.com/apache/pulsar-client-go`")
	}
	path := filepath.Join(dir, filepath.FromSlash(upstreamProtoPath))
	src, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("read upstream schema: %v", err)
	}
	return string(src), path
}

func TestSchemaMatchesPulsarClientGoPulsarApiProto(t *testing.T) {
	src, path := upstreamProto(t)
	upstream, err := parseProto2(src)
	if err != nil {
		t.Fatalf("parse %s: %v", path, err)
	}
	ours := schemaFromDescriptor(pb.File_pulsar_proto)

	allow := defaultAllowances()
	diffs := compareSchemas(ours, upstream, allow)
	if len(diffs) > 0 {
		t.Errorf("protocol/pb/pulsar.proto has drifted from %s in %d ways:\n  %s",
			path, len(diffs), strings.Join(diffs, "\n  "))
	}
	for _, key := range sortedKeys(allow.newer) {
		if !allow.sawNewer[key] && !slices.Contains(allow.staleNote, key) {
			t.Errorf("allow-list entry %s names no field of our schema", key)
		}
	}
	for _, key := range allow.staleNote {
		t.Logf("note: upstream now has %s; its entry in newerThanUpstream can go", key)
	}

	// The comparison must have had something to compare.
	shared := 0
	for name := range ours.Messages {
		if upstream.Messages[name] != nil {
			shared++
		}
	}
	if shared < 40 {
		t.Fatalf("only %d messages matched upstream by name; the parser or the matching is broken", shared)
	}
	t.Logf("compared %d shared messages and %d enums against %s", shared, len(ours.Enums), path)
}

func TestSchemaParserReadsOurProtoAsProtocCompiledIt(t *testing.T) {
	src, err := os.ReadFile(filepath.Join("pb", "pulsar.proto"))
	if err != nil {
		t.Fatal(err)
	}
	parsed, err := parseProto2(string(src))
	if err != nil {
		t.Fatal(err)
	}
	compiled := schemaFromDescriptor(pb.File_pulsar_proto)
	if got, want := sortedKeys(parsed.Messages), sortedKeys(compiled.Messages); !slices.Equal(got, want) {
		t.Fatalf("messages:\n parsed %v\ncompiled %v", got, want)
	}
	if got, want := sortedKeys(parsed.Enums), sortedKeys(compiled.Enums); !slices.Equal(got, want) {
		t.Fatalf("enums:\n parsed %v\ncompiled %v", got, want)
	}
	// Identical schemas: no differences, no allowances needed.
	none := &schemaAllowances{sawNewer: map[string]bool{}}
	if diffs := compareSchemas(compiled, parsed, none); len(diffs) > 0 {
		t.Fatalf("parser disagrees with protoc on our own schema:\n  %s", strings.Join(diffs, "\n  "))
	}
	for name, m := range compiled.Messages {
		if len(m.Fields) != len(parsed.Messages[name].Fields) {
			t.Errorf("%s: parsed %d fields, compiled %d", name, len(parsed.Messages[name].Fields), len(m.Fields))
		}
	}
}

func TestSchemaParserHandlesNestingCommentsAndOptions(t *testing.T) {
	src := `
/* block
   comment */
syntax = "proto2";
package demo.wire;
option go_package = "x/y"; // trailing
enum Top { A = 0; B = 1 [deprecated = true]; }
message Outer {
  enum Kind { K0 = 0; K1 = -1; }
  message Inner {
    required Kind kind = 1;
    optional .demo.wire.Top top = 2 [default = B];
    optional string s = 3 [default = "a \"quoted\" ; value"];
  }
  repeated Inner inners = 1 [packed = false];
  optional Kind kind = 2 [deprecated = true, default = K1];
  optional int64 n = 3 [default = -0x10];
  optional bool flag = 4;
  reserved 5, 6;
}
`
	s, err := parseProto2(src)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string][]protoField{
		"Outer": {
			{Name: "inners", Number: 1, Label: "repeated", Type: "message Inner"},
			{Name: "kind", Number: 2, Label: "optional", Type: "enum Kind", Default: "K1"},
			{Name: "n", Number: 3, Label: "optional", Type: "int64", Default: "-16"},
			{Name: "flag", Number: 4, Label: "optional", Type: "bool", Default: "false"},
		},
		"Outer.Inner": {
			{Name: "kind", Number: 1, Label: "required", Type: "enum Kind", Default: "K0"},
			{Name: "top", Number: 2, Label: "optional", Type: "enum Top", Default: "B"},
			{Name: "s", Number: 3, Label: "optional", Type: "string", Default: `a "quoted" ; value`},
		},
	}
	for name, fields := range want {
		m := s.Messages[name]
		if m == nil {
			t.Fatalf("message %s not parsed; have %v", name, sortedKeys(s.Messages))
		}
		if len(m.Fields) != len(fields) {
			t.Fatalf("%s: %d fields, want %d", name, len(m.Fields), len(fields))
		}
		for i, w := range fields {
			g := m.Fields[i]
			if g.Name != w.Name || g.Number != w.Number || g.Label != w.Label || g.Type != w.Type || g.Default != w.Default {
				t.Errorf("%s field %d: got %+v, want %+v", name, i, *g, w)
			}
		}
	}
	if n, ok := s.Enums["Outer.Kind"].value("K1"); !ok || n != -1 {
		t.Errorf("Outer.Kind.K1 = %d, %v; want -1", n, ok)
	}
	if _, ok := s.Enums["Top"]; !ok {
		t.Error("top-level enum Top not parsed")
	}
}

func TestSchemaDriftCheckReportsEveryKindOfDifference(t *testing.T) {
	src, _ := upstreamProto(t)
	// Doctor a copy of upstream so that it disagrees with our schema in each
	// way the check must catch; ours stays as compiled.
	edits := []struct{ old, new, wantDiff string }{
		{"optional int32 num_messages = 3 [default = 1];", "optional int32 num_messages = 3 [default = 2];",
			`CommandSend.num_messages: default "1", upstream "2"`},
		{"optional int32 max_message_size = 3;", "optional int32 max_message_size = 30;",
			"CommandConnected.max_message_size: number 3, upstream 30"},
		{"required string server_version = 1;", "optional string server_version = 1;",
			"CommandConnected.server_version: label required, upstream optional"},
		{"optional CompressionType compression = 8 [default = NONE];", "optional uint32 compression = 8;",
			"MessageMetadata.compression: type enum CompressionType, upstream uint32"},
		{"optional CommandNewTxn newTxn", "optional CommandEndTxn newTxn",
			"BaseCommand.newTxn: type message CommandNewTxn, upstream message CommandEndTxn"},
		{"optional bool supports_auth_refresh = 1 [default = false];", "optional bool supports_auth_refresh_v2 = 1 [default = false];",
			`FeatureFlags.supports_auth_refresh = 1: upstream has no field of that name; its field 1 is "supports_auth_refresh_v2"`},
		{"ChecksumError = 9;", "ChecksumError = 91;",
			"enum ServerError: value ChecksumError = 9, upstream 91"},
	}
	doctored := src
	var want []string
	for _, e := range edits {
		if strings.Count(doctored, e.old) != 1 {
			t.Fatalf("upstream text no longer holds exactly one %q; update this test", e.old)
		}
		doctored = strings.Replace(doctored, e.old, e.new, 1)
		want = append(want, e.wantDiff)
	}
	upstream, err := parseProto2(doctored)
	if err != nil {
		t.Fatal(err)
	}
	// Our own schema also gains a field upstream lacks.
	ours := schemaFromDescriptor(pb.File_pulsar_proto)
	ours.Messages["CommandPing"].Fields = append(ours.Messages["CommandPing"].Fields,
		&protoField{Name: "sneaky", Number: 9, Label: "optional", Type: "uint64", Default: "0"})
	want = append(want, "CommandPing.sneaky = 9: upstream has no such field")

	got := compareSchemas(ours, upstream, defaultAllowances())
	slices.Sort(got)
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Fatalf("differences found:\n  %s\nwant:\n  %s", strings.Join(got, "\n  "), strings.Join(want, "\n  "))
	}
}
