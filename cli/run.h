// run.h — `gnnprof run`: profile an unmodified program through the preload library.
#pragma once

#include <map>
#include <string>
#include <vector>

namespace gnnprof::cli {

struct RunArgs {
  std::string output;   ///< the launched process's profile; "" = $GNNPROF_OUTPUT or gnnprof.json
  std::string html_out;  ///< optional HTML report of that profile
  std::string preload;   ///< libgnnprof_preload.so; "" = found next to the executable
  std::vector<std::string> lines;  ///< --lines specs (GNNPROF_LINES): auto, none, FILE[:FUNCTION]
  std::vector<std::string> command;
};

/// Runs the command with libgnnprof_preload.so injected, collects the profiles its processes
/// wrote and lists them. Returns the command's exit status (a command killed by a signal
/// makes gnnprof die of the same signal), or 2 when the command cannot be started.
int run_run(const RunArgs& args);

/// The preload library to inject: $GNNPROF_PRELOAD, else the first of ../lib/,
/// ../../lib/ (build tree) relative to this executable, else "".
std::string find_preload();

/// The directory that holds the `gnnprof` Python package: $GNNPROF_PYTHON_DIR, else the build
/// tree's python/ or the installed lib/python3/dist-packages relative to this executable, else "".
std::string find_python_dir();

/// Makes Python programs import gnnprof at startup: the package's _inject directory (a
/// sitecustomize.py that chains to the user's own) and the package's directory go first on
/// `env`'s PYTHONPATH. Returns false (env unchanged) when the package is not found.
bool inject_python(std::map<std::string, std::string>& env);

/// `gnnprof env`: the GNNPROF_* table (gnnprof/config.h) with each variable's value here, or
/// (markdown) the table as docs/configuration.md holds it.
int run_env(bool markdown);

}  // namespace gnnprof::cli
