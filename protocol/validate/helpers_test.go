package validate

import (
	"encoding/json"
	"reflect"
	"testing"

	"github.com/toolbox-dev/toolbox/protocol"
)

// assertRoundTrip checks that a parsed Describe marshals to a document that
// parses back to the same value.
func assertRoundTrip(t testing.TB, d *protocol.Describe) {
	t.Helper()
	b, err := json.Marshal(d)
	if err != nil {
		t.Fatalf("marshal: %v", err)
	}
	d2, err := ParseDescribe(b)
	if err != nil {
		t.Fatalf("the marshalled Describe does not parse: %v\n%s", err, b)
	}
	if !reflect.DeepEqual(d, d2) {
		t.Fatalf("round trip changed the Describe\nbefore: %+v\nafter:  %+v\njson: %s", d, d2, b)
	}
}
