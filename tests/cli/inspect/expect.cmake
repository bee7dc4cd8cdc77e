# Helpers of the inspect CLI tests (this folder is not globbed: only tests/cli/*.cmake are tests).

# Runs `strata inspect ARGS...`; sets rc, out and err in the caller's scope.
function(run_inspect)
  execute_process(COMMAND ${STRATA} inspect ${ARGN} RESULT_VARIABLE code OUTPUT_VARIABLE o ERROR_VARIABLE e)
  set(rc "${code}" PARENT_SCOPE)
  set(out "${o}" PARENT_SCOPE)
  set(err "${e}" PARENT_SCOPE)
endfunction()

function(expect_rc want what)
  if(NOT rc STREQUAL "${want}")
    message(FATAL_ERROR "${what}: exit code ${rc}, expected ${want}\nstdout:\n${out}\nstderr:\n${err}")
  endif()
endfunction()

# Fails unless `text` holds `needle` (a literal string).
function(expect_contains text needle what)
  string(FIND "${text}" "${needle}" at)
  if(at EQUAL -1)
    message(FATAL_ERROR "${what}: expected to find\n  ${needle}\nin:\n${text}")
  endif()
endfunction()

function(expect_equal got want what)
  if(NOT "${got}" STREQUAL "${want}")
    message(FATAL_ERROR "${what}: got '${got}', expected '${want}'")
  endif()
endfunction()
