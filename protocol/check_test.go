package protocol

import "testing"

func TestParseCheck(t *testing.T) {
	tests := []struct {
		in   string
		want CheckResult
	}{
		{`{"ok": true}`, CheckResult{OK: true}},
		{`{"ok": false, "detail": "rg not found", "fix": "apt-get install ripgrep"}`, CheckResult{Detail: "rg not found", Fix: "apt-get install ripgrep"}},
		{"\n {\"ok\":true,\"detail\":\"\",\"version\":3}\n", CheckResult{OK: true}},
		{"{\"ok\": true} \r\n\t \n", CheckResult{OK: true}}, // JSON white space after the value
	}
	for _, tt := range tests {
		got, err := ParseCheck([]byte(tt.in))
		if err != nil || got != tt.want {
			t.Errorf("ParseCheck(%q) = %+v, %v; want %+v", tt.in, got, err, tt.want)
		}
	}
}

func TestParseCheckErrors(t *testing.T) {
	tests := []struct{ in, want string }{
		{``, "parsing check output: not JSON: empty input"},
		{`ok`, "parsing check output: not JSON: invalid character 'o' looking for beginning of value (at byte 1)"},
		{`{"ok": true} {"ok": false}`, "parsing check output: not JSON: unexpected data after the JSON value at byte 14"},
		{"{\"ok\": true} \u00a0", "parsing check output: not JSON: unexpected data after the JSON value at byte 13"}, // no-break space is not JSON white space
		{"{\"ok\": true} \x00", "parsing check output: not JSON: unexpected data after the JSON value at byte 13"},
		{`[true]`, `parsing check output: want a JSON object such as {"ok": true}, got an array`},
		{`{}`, `parsing check output: missing required key "ok" (true or false)`},
		{`{"ok": null}`, `parsing check output: "ok" is null; want true or false`},
		{`{"ok": "true"}`, `parsing check output: "ok" is a string; want true or false`},
		{`{"ok": 1, "detail": 2, "fix": ["x"]}`, `parsing check output: "ok" is a number; want true or false; "detail" is a number; want a string; "fix" is an array; want a string`},
	}
	for _, tt := range tests {
		got, err := ParseCheck([]byte(tt.in))
		if err == nil || err.Error() != tt.want {
			t.Errorf("ParseCheck(%q) = %+v, %v\nwant error %s", tt.in, got, err, tt.want)
		}
		if got != (CheckResult{}) {
			t.Errorf("ParseCheck(%q) returned %+v with an error", tt.in, got)
		}
	}
}
