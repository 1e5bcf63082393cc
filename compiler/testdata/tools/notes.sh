not exec
