# The default workspace, relative to this file, and the builtin confined
# to the workspace: nothing of it is checked at load (it is chosen per call).
workspace = "../proj/"

builtin "process" {
  sandbox {
    fs {
      read  = ["{workspace}", "/usr"]
      write = ["{workspace}/out"]
    }
    net = "none"
  }
}
