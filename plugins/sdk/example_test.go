package sdk_test

import (
	"context"
	"fmt"
	"strings"

	"github.com/toolbox-dev/toolbox/plugins/sdk"
	"github.com/toolbox-dev/toolbox/protocol"
)

// upper is a complete plugin tool: it prints its text argument in upper case,
// repeated times times.
type upper struct{}

func (upper) Describe() protocol.Describe {
	return protocol.Describe{
		Slug:        "upper",
		Description: "Print text in upper case",
		Args: []protocol.Arg{
			{Name: "text", Description: "what to print", Type: "string", BackingType: "string", Arity: protocol.AritySingle, Mode: protocol.ModePositional},
			{Name: "times", Description: "how many times (default 1)", Type: "integer", BackingType: "integer", Arity: protocol.ArityOptional, Mode: protocol.ModeDashDashEqual},
		},
	}
}

func (upper) Check(context.Context) protocol.CheckResult {
	return protocol.CheckResult{OK: true, Detail: "needs nothing"}
}

func (upper) Run(ctx context.Context, args sdk.Args, out sdk.Emitter) (int, error) {
	times, err := args.Int("times", 1)
	if err != nil {
		return 2, err
	}
	sdk.Logger().Debug("upper called", "times", times) // to stderr, never stdout
	_, err = fmt.Fprintln(out, strings.Repeat(strings.ToUpper(args.String("text")), int(times)))
	return 0, err
}

// A plugin's main function is one line: func main() { sdk.Serve(upper{}) }.
// Invoke runs the same call path in-process (decode, validate, Run), which
// is how a tool is tested without starting it as a plugin.
func Example() {
	var out sdk.Recorder
	res, err := sdk.Invoke(context.Background(), upper{}, "", []byte(`{"text": "ab", "times": 2}`), &out)
	fmt.Printf("%q %d %v\n", out.Output.String(), res.ExitCode, err)

	// Arguments that do not match the describe document never reach Run.
	_, err = sdk.Invoke(context.Background(), upper{}, "", []byte(`{"text": "ab", "times": "twice"}`), &out)
	fmt.Println(err != nil)
	// Output:
	// "ABAB\n" 0 <nil>
	// true
}
