# step(COMMAND...): runs a command of a cmake -P test script in DIR, fails the test with its output
# when it fails, and shows its output otherwise. Included by the cross-check scripts.
function(step)
  execute_process(COMMAND ${ARGN} WORKING_DIRECTORY ${DIR} RESULT_VARIABLE rc OUTPUT_VARIABLE out
                  ERROR_VARIABLE err)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "${ARGN} failed (${rc}):\n${out}${err}")
  endif()
  message(STATUS "${out}")
endfunction()
