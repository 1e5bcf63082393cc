package sandbox

import "github.com/toolbox-dev/toolbox/sandbox/helper"

// The helper's own side (what runs in the helper and the limits wrapper)
// is package helper, so that cmd/toolbox-reaper can link it without this
// package's dependencies (cgo among them); these are its names here.
type (
	helperSpec  = helper.Spec
	helperGrant = helper.Grant
	rlimit      = helper.Rlimit
	limitsSpec  = helper.LimitsSpec
	startResult = helper.StartResult
)

const (
	helperArg       = helper.Arg
	limitsArg       = helper.LimitsArg
	exitSetupFailed = helper.ExitSetupFailed
	errnoPrefix     = helper.ErrnoPrefix
)
