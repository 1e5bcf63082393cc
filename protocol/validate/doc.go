// Package validate checks documents of the tool protocol against JSON
// Schemas: describe documents (ParseDescribe, against the embedded v1 and v2
// schemas under schema/, plus the semantic rules a schema cannot express)
// and the events a v2 tool declares (CompileEventSchema).
//
// It is split from package protocol because the JSON Schema library it
// links compiles every draft's meta-schema in its package init: a binary
// that imports this package pays that at every start. The compiler and the
// servers import it; the fast path of `toolbox run` does not (see
// cmd/toolbox). Its decisions are listed in package protocol's doc.
package validate
