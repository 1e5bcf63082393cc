package protocol

import (
	"errors"
	"testing"
)

func TestWorkspacePath(t *testing.T) {
	for _, c := range []struct {
		in, rel string
		ok, bad bool
	}{
		{in: "{workspace}", ok: true},
		{in: "{workspace}/", ok: true},
		{in: "{workspace}/src", rel: "src", ok: true},
		{in: "{workspace}//a/./b/", rel: "a/b", ok: true},
		{in: "../../..", ok: false},
		{in: "/srv/data", ok: false},
		{in: "", ok: false},
		// Attacks: climbing above the workspace, or the token where a real
		// name could be read as it.
		{in: "{workspace}/..", bad: true},
		{in: "{workspace}/a/../..", bad: true},
		{in: "{workspace}/a/..", bad: true},
		{in: "a/{workspace}", bad: true},
		{in: "./{workspace}", bad: true},
		{in: "/{workspace}", bad: true},
		{in: "{workspace}x", bad: true},
		{in: "{workspace}/{workspace}", bad: true},
		{in: "{workspace}/x{workspace}", bad: true},
	} {
		rel, ok, err := WorkspacePath(c.in)
		if c.bad {
			if !errors.Is(err, ErrWorkspacePath) {
				t.Errorf("WorkspacePath(%q) = %q, %v, %v; want ErrWorkspacePath", c.in, rel, ok, err)
			}
			continue
		}
		if err != nil || ok != c.ok || rel != c.rel {
			t.Errorf("WorkspacePath(%q) = %q, %v, %v; want %q, %v, nil", c.in, rel, ok, err, c.rel, c.ok)
		}
	}
}
