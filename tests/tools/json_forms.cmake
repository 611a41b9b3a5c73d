# `--indent N` prints the same JSON document as the default one-line form: runs the CLI with ARGS
# ('|'-separated), then with ARGS and each of FORMS ('|'-separated option pairs, "--indent 2"),
# parses every output with string(JSON) and compares it with the first.
string(REPLACE "|" ";" args "${ARGS}")
execute_process(COMMAND ${CLI} ${args} RESULT_VARIABLE result OUTPUT_VARIABLE line ERROR_VARIABLE err)
if(NOT result EQUAL 0)
  message(FATAL_ERROR "tessel ${ARGS} failed (${result}): ${err}")
endif()
string(REPLACE "|" ";" forms "${FORMS}")
foreach(form ${forms})
  separate_arguments(form_args UNIX_COMMAND "${form}")
  execute_process(COMMAND ${CLI} ${args} ${form_args} RESULT_VARIABLE result OUTPUT_VARIABLE out
                  ERROR_VARIABLE err)
  if(NOT result EQUAL 0)
    message(FATAL_ERROR "tessel ${ARGS} ${form} failed (${result}): ${err}")
  endif()
  string(JSON same ERROR_VARIABLE error EQUAL "${line}" "${out}")
  if(error OR NOT same)
    message(FATAL_ERROR "tessel ${ARGS} ${form} printed\n${out}\nnot the document of\n${line}\n${error}")
  endif()
endforeach()
