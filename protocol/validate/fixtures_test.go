package validate

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rogpeppe/go-internal/txtar"
)

var update = flag.Bool("update", false, "rewrite the expected sections of testdata/describe/*.txtar")

// TestDescribeFixtures walks testdata/describe. Each archive holds
// describe.json and what ParseDescribe must make of it: parsed.json (the
// Describe, marshalled with indentation) for a valid document, problems
// (one per line, exactly as DescribeError lists them) for an invalid one.
// Archives named bad-* must fail. go test -run TestDescribeFixtures -update
// rewrites the expected sections; review the diff.
func TestDescribeFixtures(t *testing.T) {
	files, err := filepath.Glob(filepath.Join("testdata", "describe", "*.txtar"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no fixtures: %v", err)
	}
	for _, file := range files {
		name := strings.TrimSuffix(filepath.Base(file), ".txtar")
		t.Run(name, func(t *testing.T) {
			ar, err := txtar.ParseFile(file)
			if err != nil {
				t.Fatal(err)
			}
			sections := map[string][]byte{}
			for _, f := range ar.Files {
				sections[f.Name] = f.Data
			}
			input, ok := sections["describe.json"]
			if !ok {
				t.Fatal("no describe.json section")
			}
			wantBad := strings.HasPrefix(name, "bad-")
			var gotName string
			var got []byte
			d, err := ParseDescribe(input)
			switch {
			case err != nil && !wantBad:
				t.Fatalf("ParseDescribe: %v", err)
			case err == nil && wantBad:
				t.Fatalf("ParseDescribe accepted a bad document: %+v", d)
			case err != nil:
				var de *DescribeError
				if !errors.As(err, &de) {
					t.Fatalf("error %T is not a *DescribeError: %v", err, err)
				}
				gotName, got = "problems", []byte(strings.Join(de.Problems, "\n")+"\n")
			default:
				b, err := json.MarshalIndent(d, "", "  ")
				if err != nil {
					t.Fatal(err)
				}
				gotName, got = "parsed.json", append(b, '\n')
				assertRoundTrip(t, d)
			}
			if *update {
				ar.Files = []txtar.File{{Name: "describe.json", Data: input}, {Name: gotName, Data: got}}
				if err := os.WriteFile(file, txtar.Format(ar), 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			want, ok := sections[gotName]
			if !ok {
				t.Fatalf("no %s section; got:\n%s", gotName, got)
			}
			if !bytes.Equal(got, want) {
				t.Errorf("%s differs\ngot:\n%s\nwant:\n%s", gotName, got, want)
			}
		})
	}
}
