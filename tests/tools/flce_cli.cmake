# `tessel plan flce`: the contract's example and errors; `tessel flce`: .npy round trips and
# failures, from a GoogleTest program that runs the CLI (flce_cli_test.cpp).
tessel_cli_test(plan_flce_contract "plan|flce|--bt|16384|--hidden|4096|--vocab|128256|--dtype|bf16"
  STDOUT "{\"chunk_size\": 512, \"num_chunks\": 32, \"scratch_bytes\": 394215680}")
tessel_cli_test(plan_flce_device_cuda "plan|flce|--bt|16384|--hidden|4096|--vocab|128256|--dtype|bf16|--device|cuda"
  STDOUT "{\"chunk_size\": 2048, \"num_chunks\": 8, \"scratch_bytes\": 1576222976}")
tessel_cli_test(plan_flce_host_f32 "plan|flce|--bt|2048|--hidden|512|--vocab|32000|--device|host"
  STDOUT "{\"chunk_size\": 256, \"num_chunks\": 8, \"scratch_bytes\": 32794880}")
tessel_cli_test(plan_flce_forced_chunk "plan|flce|--bt|100|--hidden|8|--vocab|8|--chunk-size|7"
  STDOUT "{\"chunk_size\": 7, \"num_chunks\": 15, \"scratch_bytes\": 2304}")
tessel_cli_test(plan_flce_empty "plan|flce|--bt|0|--hidden|8|--vocab|8"
  STDOUT "{\"chunk_size\": 1, \"num_chunks\": 0, \"scratch_bytes\": 256}")
tessel_cli_test(plan_flce_zero_hidden "plan|flce|--bt|10|--hidden|0|--vocab|8"
  STDERR "^tessel: an FLCE plan needs a hidden size >= 1, got 0\\.\n$")
tessel_cli_test(plan_flce_bad_dtype "plan|flce|--bt|10|--hidden|4|--vocab|8|--dtype|int8"
  STDERR "^tessel: --dtype: FLCE computes on f32, f64, f16 or bf16, not i8\\.\n$")
tessel_cli_test(plan_flce_bad_device "plan|flce|--bt|10|--hidden|4|--vocab|8|--device|tpu"
  STDERR "^tessel: --device: \"tpu\" is not a device; use host or cuda\\.\n$")
# Every --*-out is optional, but a run must ask for one (before any file is read).
tessel_cli_test(flce_no_output "flce|--input|x.npy|--weight|w.npy|--target|t.npy"
  STDERR "^tessel: no output asked for; give at least one of --loss-out, --z-loss-out, --grad-input-out, --grad-weight-out, --grad-bias-out, --lse-out, --target-logprob-out, --entropy-out, --argmax-out or --accuracy-out\\.\n$")
tessel_cli_test(flce_missing_input "flce|--weight|w.npy|--target|t.npy|--loss-out|l.npy"
  STDERR "^tessel: --input is required; see tessel flce --help\\.\n$")
tessel_cli_test(flce_help "flce|--help" STDOUT_MATCH "--loss-out")

add_executable(tessel_flce_cli_tests ${CMAKE_CURRENT_SOURCE_DIR}/flce_cli_test.cpp)
target_link_libraries(tessel_flce_cli_tests PRIVATE tessel::tessel tessel_build_flags GTest::gtest_main)
target_include_directories(tessel_flce_cli_tests PRIVATE ${PROJECT_SOURCE_DIR}/tests)
target_compile_definitions(tessel_flce_cli_tests PRIVATE "TESSEL_CLI_PATH=\"$<TARGET_FILE:tessel_cli>\"")
add_dependencies(tessel_flce_cli_tests tessel_cli)
gtest_discover_tests(tessel_flce_cli_tests TEST_PREFIX "cli.flce." DISCOVERY_TIMEOUT 60
                     PROPERTIES LABELS "cli;flce")

find_program(TESSEL_PYTHON3 python3)
if(TESSEL_PYTHON3)
  add_test(NAME cli.flce_crosscheck_python
           COMMAND ${CMAKE_COMMAND} -DCLI=$<TARGET_FILE:tessel_cli>
                   -DSCRIPT=${PROJECT_SOURCE_DIR}/tools/tessel/flce_crosscheck.py
                   -DDIR=${CMAKE_CURRENT_BINARY_DIR}/flce_crosscheck
                   -P ${CMAKE_CURRENT_SOURCE_DIR}/flce_crosscheck.cmake)
  set_tests_properties(cli.flce_crosscheck_python PROPERTIES LABELS "cli;flce")
endif()
