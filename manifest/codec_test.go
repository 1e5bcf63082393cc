package manifest

import (
	"bytes"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/toolbox-dev/toolbox/protocol"
)

func smallLock() *Lock {
	l := New()
	l.File = FileRef{Path: "toolbox.hcl", SHA256: hashOf('a'), Config: hashOf('f')}
	l.Sandbox = "none"
	l.Tools["echo"] = &Tool{
		Kind: "exec", Path: "tools/echo", SHA256: hashOf('b'), Platform: "linux/amd64", Protocol: 1,
		Describe: &protocol.Describe{Slug: "echo", Description: "Echo <it> & more.", Args: []protocol.Arg{}},
		Runtime:  Runtime{Mechanism: "none"},
		Probe:    Probe{Status: StatusUnverified},
	}
	l.Capabilities["say"] = &Capability{Backends: []string{"echo"}, Active: "echo"}
	return l
}

// The exact canonical form: sorted keys at every level (struct fields
// included), two-space indent, trailing newline, "<&>" not escaped, nil
// env_allowlist absent.
func TestMarshalCanonicalForm(t *testing.T) {
	want := `{
  "_comment": "This file is maintained by ` + "`toolbox lock`" + `. Do not edit it by hand.",
  "capabilities": {
    "say": {
      "active": "echo",
      "backends": [
        "echo"
      ]
    }
  },
  "sandbox": "none",
  "toolbox_file": {
    "config_sha256": "` + hashOf('f') + `",
    "path": "toolbox.hcl",
    "sha256": "` + hashOf('a') + `"
  },
  "tools": {
    "echo": {
      "describe": {
        "args": [],
        "description": "Echo <it> & more.",
        "slug": "echo"
      },
      "kind": "exec",
      "path": "tools/echo",
      "platform": "linux/amd64",
      "probe": {
        "status": "unverified"
      },
      "protocol": 1,
      "runtime": {
        "mechanism": "none"
      },
      "sha256": "` + hashOf('b') + `"
    }
  },
  "version": 3
}
`
	got := mustMarshal(t, smallLock())
	if string(got) != want {
		t.Errorf("Marshal:\n%s\nwant:\n%s", got, want)
	}
}

func TestMarshalEnvAllowlistNilVersusEmpty(t *testing.T) {
	for _, tc := range []struct {
		list []string
		want string // the env_allowlist line, "" for none
	}{
		{nil, ""},
		{[]string{}, `"env_allowlist": [],`},
		{[]string{"PATH"}, `"env_allowlist": [`},
	} {
		l := smallLock()
		l.EnvAllowlist = tc.list
		b := mustMarshal(t, l)
		has := strings.Contains(string(b), `"env_allowlist"`)
		if tc.want == "" && has || tc.want != "" && !strings.Contains(string(b), tc.want) {
			t.Errorf("EnvAllowlist %#v marshals as:\n%s", tc.list, b)
		}
		back, err := Unmarshal(b)
		if err != nil {
			t.Fatal(err)
		}
		if (back.EnvAllowlist == nil) != (tc.list == nil) || len(back.EnvAllowlist) != len(tc.list) {
			t.Errorf("EnvAllowlist %#v read back as %#v", tc.list, back.EnvAllowlist)
		}
	}
}

func TestRoundTrip(t *testing.T) {
	// smallLock holds no json.RawMessage (whose bytes keep their layout),
	// so it must read back deeply equal.
	l := smallLock()
	back, err := Unmarshal(mustMarshal(t, l))
	if err != nil {
		t.Fatalf("Unmarshal: %v", err)
	}
	if !reflect.DeepEqual(l, back) {
		t.Errorf("round trip changed the lock:\n got %#v\nwant %#v", back, l)
	}

	// testLock has every kind of field: the bytes must be stable.
	first := mustMarshal(t, testLock())
	again, err := Unmarshal(first)
	if err != nil {
		t.Fatalf("Unmarshal: %v", err)
	}
	if second := mustMarshal(t, again); !bytes.Equal(first, second) {
		t.Errorf("re-marshal differs:\n%s\nvs\n%s", first, second)
	}
	if !strings.Contains(string(first), `"maximum": 1.50`) {
		t.Errorf("number text in an event schema was not kept:\n%s", first)
	}
	if strings.Index(string(first), `"a": {`) > strings.Index(string(first), `"z": {`) {
		t.Errorf("keys inside an event schema are not sorted:\n%s", first)
	}
}

// Equal locks built by filling maps in different orders marshal to the same
// bytes.
func TestMarshalIndependentOfInsertionOrder(t *testing.T) {
	build := func(reverse bool) *Lock {
		l := testLock()
		names := make([]string, 40)
		for i := range names {
			names[i] = fmt.Sprintf("tool_%02d", i)
		}
		if reverse {
			for i, j := 0, len(names)-1; i < j; i, j = i+1, j-1 {
				names[i], names[j] = names[j], names[i]
			}
		}
		for _, n := range names {
			env := map[string]string{}
			for _, k := range names {
				env["V_"+k] = n
			}
			l.Tools[n] = &Tool{
				Kind: "exec", Path: "tools/" + n, SHA256: hashOf('e'), Platform: "linux/amd64", Protocol: 2,
				Describe: &protocol.Describe{Protocol: 2, Slug: n, Args: []protocol.Arg{},
					Runtime: &protocol.Runtime{Environment: env}},
				Runtime: Runtime{Mechanism: "none"},
				Probe:   Probe{Status: StatusOK},
			}
			l.Capabilities["cap_"+n] = &Capability{Backends: []string{n}, Active: n}
		}
		return l
	}
	a, b := mustMarshal(t, build(false)), mustMarshal(t, build(true))
	if !bytes.Equal(a, b) {
		t.Errorf("locks equal but for insertion order marshal differently")
	}
}

func TestMarshalSortsBuiltinsWithoutTouchingTheLock(t *testing.T) {
	l := smallLock()
	l.Builtins = []string{"zeta", "process"}
	l.Process = &ProcessBuiltin{Unconfined: true, Mechanism: "none"}
	b := mustMarshal(t, l)
	if !strings.Contains(string(b), "\"builtins\": [\n    \"process\",\n    \"zeta\"\n  ]") {
		t.Errorf("builtins not sorted:\n%s", b)
	}
	if l.Builtins[0] != "zeta" {
		t.Errorf("Marshal modified the caller's Builtins: %q", l.Builtins)
	}
}

func TestMarshalRefusesInvalidLock(t *testing.T) {
	l := smallLock()
	l.Capabilities["say"].Backends = []string{"nope"}
	_, err := Marshal(l)
	var inv *InvalidError
	if !errors.As(err, &inv) {
		t.Fatalf("Marshal error = %v, want an *InvalidError", err)
	}
	if _, err := Marshal(nil); err == nil {
		t.Errorf("Marshal(nil) succeeded")
	}
}

func TestUnmarshalStrict(t *testing.T) {
	valid := string(mustMarshal(t, smallLock()))
	edit := func(old, new string) string {
		if !strings.Contains(valid, old) {
			t.Fatalf("test edit %q does not apply", old)
		}
		return strings.Replace(valid, old, new, 1)
	}
	for _, tc := range []struct {
		name, data string
		want       string // substring of the error
	}{
		{"unknown top-level key", edit(`"sandbox"`, `"extra": 1, "sandbox"`), `unknown field "extra"`},
		{"unknown tool key", edit(`"kind"`, `"color": "red", "kind"`), `unknown field "color"`},
		{"unknown describe key", edit(`"slug"`, `"slugg": "x", "slug"`), `unknown field "slugg"`},
		{"wrong type", edit(`"protocol": 1`, `"protocol": "1"`), "decoding lock"},
		{"not json", "{", "decoding lock"},
		{"trailing data", valid + "{}", "unexpected data after the top-level object"},
		{"empty", "", "decoding lock"},
		{"wrong version", edit(`"version": 3`, `"version": 1`), "lock format version is 1, this program reads version 3: run toolbox lock"},
		{"wrong version and unknown keys", edit(`"version": 3`, `"version": 7, "new_key": {}`), "lock format version is 7"},
		{"missing version", edit(`,
  "version": 3`, ``), "lock format version is 0"},
		{"dangling backend", edit(`"backends": [
        "echo"`, `"backends": [
        "echo", "ghost"`), `capability "say": backend "ghost" is not a locked tool`},
		{"dangling active", edit(`"active": "echo"`, `"active": "ghost"`), `capability "say": active "ghost" is not a locked tool`},
		{"bad status", edit(`"status": "unverified"`, `"status": "fine"`), `tool "echo": probe.status is "fine"`},
		// A duplicate key wins over the first: tools becomes null.
		{"null tools", edit(`"version": 3`, `"version": 3, "tools": null`), `tools is missing`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			l, err := Unmarshal([]byte(tc.data))
			if err == nil {
				t.Fatalf("Unmarshal accepted it: %+v", l)
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %q does not contain %q", err, tc.want)
			}
		})
	}
}

// versionKey is the "version" member of a lock of format v, as Marshal
// writes it.
func versionKey(v int) string { return fmt.Sprintf(`"version": %d`, v) }

func TestUnmarshalVersionErrorIsTyped(t *testing.T) {
	next := FormatVersion + 1
	data := strings.Replace(string(mustMarshal(t, smallLock())), versionKey(FormatVersion), versionKey(next), 1)
	_, err := Unmarshal([]byte(data))
	var ve *VersionError
	if !errors.As(err, &ve) || ve.Version != next {
		t.Fatalf("error = %v, want *VersionError{%d}", err, next)
	}
}

// Unmarshal reports every problem, not only the first.
func TestUnmarshalCollectsEveryProblem(t *testing.T) {
	data := `{
  "_comment": "edited",
  ` + versionKey(FormatVersion) + `,
  "sandbox": "chroot",
  "toolbox_file": {"path": "", "sha256": "ABC", "config_sha256": "ABC"},
  "tools": {
    "t": {"kind": "shell", "path": "t", "sha256": "` + hashOf('1') + `", "platform": "linux",
          "protocol": 1, "runtime": {"mechanism": "auto"}, "probe": {"status": "ok"}}
  },
  "capabilities": {"c": {"backends": ["t", "u"], "active": "u"}}
}`
	_, err := Unmarshal([]byte(data))
	var inv *InvalidError
	if !errors.As(err, &inv) {
		t.Fatalf("error = %v, want *InvalidError", err)
	}
	want := []string{
		`_comment must be "This file is maintained by ` + "`toolbox lock`" + `. Do not edit it by hand."`,
		`toolbox_file.path is missing`,
		`toolbox_file.sha256 is "ABC", want 64 lower-case hex digits`,
		`toolbox_file.config_sha256 is "ABC", want 64 lower-case hex digits`,
		`sandbox is "chroot", want one of auto, bwrap, landlock, none`,
		`tool "t": kind is "shell", want one of exec, plugin, mcp`,
		`tool "t": platform is "linux", want GOOS/GOARCH`,
		`tool "t": runtime.mechanism is "auto", want one of bwrap, landlock, none`,
		`tool "t": describe is missing (required when probe.status is "ok")`,
		`capability "c": backend "u" is not a locked tool`,
		`capability "c": active "u" is not a locked tool`,
	}
	if !reflect.DeepEqual(inv.Problems, want) {
		t.Errorf("problems:\n%s\nwant:\n%s", strings.Join(inv.Problems, "\n"), strings.Join(want, "\n"))
	}
}
