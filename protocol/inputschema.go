package protocol

// InputSchema returns the JSON Schema of args that a model sees:
//
//	{"type": "object",
//	 "properties": {NAME: {"type": BACKING, "description": TEXT}, ...},
//	 "required": [the name of every arg whose arity is not "optional",
//	              in declaration order],
//	 "additionalProperties": false}
//
// BACKING is the arg's backing_type when it is string, integer, number or
// boolean, and "string" otherwise (ValidateArgs treats it as a string too).
// TEXT is the arg's description followed by its free-text type in
// parentheses when that says more than the backing type. "required" is
// always present, empty when every arg is optional. The result is fresh
// on each call; callers may modify it.
func InputSchema(args []Arg) map[string]any {
	props := make(map[string]any, len(args))
	required := make([]string, 0, len(args))
	for _, a := range args {
		bt := backing(a.BackingType)
		desc := a.Description
		if a.Type != "" && a.Type != bt && a.Type != a.BackingType {
			if desc == "" {
				desc = a.Type
			} else {
				desc += " (" + a.Type + ")"
			}
		}
		props[a.Name] = map[string]any{"type": bt, "description": desc}
		if a.Arity != ArityOptional {
			required = append(required, a.Name)
		}
	}
	return map[string]any{
		"type":                 "object",
		"properties":           props,
		"required":             required,
		"additionalProperties": false,
	}
}
