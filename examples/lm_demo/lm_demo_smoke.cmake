# The demo's test (ctest -R example.lm_demo): a short run of DEMO must print both plans, the
# executor and the unigram entropy, lower the loss below it, and write loss.csv, loss.svg and a
# checkpoint; a run stopped halfway and resumed from its checkpoint must give the same losses (and
# the same checkpoint) as the uninterrupted run; a file that is not a checkpoint is refused with
# one sentence.
file(REMOVE_RECURSE ${WORK_DIR})
set(common --samples 1 --sample-length 40 --threads 1)

function(run_demo name expect_status)
  execute_process(COMMAND ${DEMO} ${ARGN} ${common} RESULT_VARIABLE status
                  OUTPUT_VARIABLE out ERROR_VARIABLE err)
  if(NOT status STREQUAL expect_status)
    message(FATAL_ERROR "lm_demo ${ARGN} exited with ${status}, expected ${expect_status}\n"
                        "stdout:\n${out}\nstderr:\n${err}")
  endif()
  set(${name}_out "${out}" PARENT_SCOPE)
  set(${name}_err "${err}" PARENT_SCOPE)
endfunction()

function(expect_match text regex)
  if(NOT text MATCHES "${regex}")
    message(FATAL_ERROR "expected the output to match \"${regex}\":\n${text}")
  endif()
endfunction()

# 1. Sixty steps straight.
run_demo(full 0 --steps 60 --out ${WORK_DIR}/full)
foreach(regex "FLCE plan of the LM head on the host \\(static_assert'ed\\): BT=512 H=128 V=256 -> 8 chunks"
              "Shampoo plan \\(static_assert'ed, max_preconditioner_dim 256\\): 3 parameters, 4 blocks"
              "executor: (host, because|CUDA)"
              "step +60/60  loss [0-9.]+ +[0-9.]+k tok/s"
              "samples \\(temperature"
              "is below the unigram entropy")
  expect_match("${full_out}" "${regex}")
endforeach()
foreach(file loss.csv loss.svg checkpoint.safetensors)
  if(NOT EXISTS ${WORK_DIR}/full/${file})
    message(FATAL_ERROR "lm_demo did not write ${WORK_DIR}/full/${file}")
  endif()
endforeach()
file(READ ${WORK_DIR}/full/loss.svg svg)
expect_match("${svg}" "^<svg .*<polyline .*</svg>\n$")

# The loss falls: the first step's loss is above the mean of the last steps, which is below the
# unigram entropy, and so is the held-out loss.
string(REGEX MATCH "unigram entropy of the corpus: ([0-9.]+) nats" _ "${full_out}")
set(entropy ${CMAKE_MATCH_1})
string(REGEX MATCH "loss \\(nats\\): first step ([0-9.]+), last 50 steps ([0-9.]+), held-out ([0-9.]+)"
       _ "${full_out}")
set(first ${CMAKE_MATCH_1})
set(last ${CMAKE_MATCH_2})
set(held_out ${CMAKE_MATCH_3})
if(NOT entropy OR NOT last OR NOT held_out OR NOT last LESS first OR NOT last LESS entropy OR NOT held_out LESS entropy)
  message(FATAL_ERROR "the loss did not fall: first ${first}, last ${last}, held-out ${held_out}, "
                      "unigram entropy ${entropy}")
endif()
file(STRINGS ${WORK_DIR}/full/loss.csv csv)
list(LENGTH csv rows)
if(NOT rows EQUAL 61)
  message(FATAL_ERROR "loss.csv has ${rows} lines, expected a header and 60 steps")
endif()

# 2. Thirty steps, then resumed to sixty: the same trajectory, bit for bit.
run_demo(half 0 --steps 30 --out ${WORK_DIR}/half -q)
run_demo(resumed 0 --steps 60 --out ${WORK_DIR}/resumed -q
         --resume ${WORK_DIR}/half/checkpoint.safetensors)
expect_match("${resumed_out}" "resumed from .*checkpoint.safetensors at step 30")
foreach(file loss.csv checkpoint.safetensors)
  execute_process(COMMAND ${CMAKE_COMMAND} -E compare_files ${WORK_DIR}/full/${file}
                          ${WORK_DIR}/resumed/${file} RESULT_VARIABLE differ)
  if(differ)
    message(FATAL_ERROR "the resumed run's ${file} differs from the uninterrupted run's")
  endif()
endforeach()

# 3. A file that is not a checkpoint: one sentence on stderr, exit status 1.
run_demo(bad 1 --steps 60 --out ${WORK_DIR}/bad --resume ${WORK_DIR}/full/loss.csv)
expect_match("${bad_err}" "^lm_demo: .*loss.csv is not a safetensors file or is corrupted: [^\n]*\\.\n$")
message(STATUS "lm_demo: loss ${first} -> ${last} (held-out ${held_out}) nats, unigram entropy "
               "${entropy} nats; resume reproduces the run")
