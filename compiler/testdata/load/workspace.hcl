workspace = "{workspace}/x" # want: workspace.hcl:1:13: workspace: workspace is "\{workspace\}/x"; name a directory

builtin "process" {
  sandbox {
    fs {
      read  = ["{workspace}", "{workspace}/src"]
      write = ["{workspace}/.."] # want: workspace.hcl:7:15: builtin "process": sandbox.fs.write: invalid use of \{workspace\}: path "\{workspace\}/.." has a ".." element
    }
  }
}
