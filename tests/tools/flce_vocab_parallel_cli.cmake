# `mpirun -np NP tessel flce --vocab-parallel ...`: each rank holds its slice of the classes, rank 0
# writes the outputs (the slices' grad_weight and grad_bias gathered), and the script's
# plain-Python float64 reference of the whole call agrees within 1e-12 — with class weights, bias,
# smoothing, z-loss, softcap, temperature, entropy bonus and soft targets, for mean and none;
# and fewer classes than ranks is one sentence.
# Variables: MPIEXEC, FLAGS (|-separated mpirun flags), NP, CLI, SCRIPT, DIR.
file(REMOVE_RECURSE ${DIR})
file(MAKE_DIRECTORY ${DIR})
string(REPLACE "|" ";" flags "${FLAGS}")
include(${CMAKE_CURRENT_LIST_DIR}/script_step.cmake)
find_program(PYTHON3 python3 REQUIRED)
step(${PYTHON3} ${SCRIPT} make-inputs ${DIR} --bt 9 --hidden 5 --vocab 11 --seed 6)
foreach(reduction mean none)
  file(REMOVE ${DIR}/loss.npy ${DIR}/dx.npy ${DIR}/dw.npy ${DIR}/db.npy ${DIR}/lse.npy
       ${DIR}/entropy.npy ${DIR}/argmax.npy)
  step(${MPIEXEC} ${flags} -np ${NP} ${CLI} flce --vocab-parallel --input x.npy --weight w.npy
       --target y.npy --bias b.npy --class-weights cw.npy --soft-target-indices si.npy
       --soft-target-probs sp.npy --soft-target-weight 0.5 --label-smoothing 0.1
       --lse-square-scale 1e-3 --softcap 4 --temperature 0.9 --entropy-bonus 0.1
       --reduction ${reduction} --dtype f64 --loss-out loss.npy --grad-input-out dx.npy
       --grad-weight-out dw.npy --grad-bias-out db.npy --lse-out lse.npy --entropy-out entropy.npy
       --argmax-out argmax.npy)
  step(${PYTHON3} ${SCRIPT} compare ${DIR} --backend python --bias --class-weights --soft-targets
       --soft-target-weight 0.5 --label-smoothing 0.1 --lse-square-scale 1e-3 --softcap 4
       --temperature 0.9 --entropy-bonus 0.1 --reduction ${reduction} --tolerance 1e-12)
endforeach()
# Fewer classes than ranks: one sentence from every rank, exit status 1, no output.
step(${PYTHON3} ${SCRIPT} make-inputs ${DIR}/small --bt 4 --hidden 3 --vocab 1)
execute_process(COMMAND ${MPIEXEC} ${flags} -np ${NP} ${CLI} flce --vocab-parallel
                        --input small/x.npy --weight small/w.npy --target small/y.npy
                        --loss-out small/loss.npy
                WORKING_DIRECTORY ${DIR} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
if(rc EQUAL 0 OR NOT err MATCHES "tessel: --vocab-parallel on ${NP} ranks needs at least ${NP} classes, but --weight has 1\\."
   OR EXISTS ${DIR}/small/loss.npy)
  message(FATAL_ERROR "fewer classes than ranks: status ${rc}, stderr:\n${err}")
endif()
file(REMOVE_RECURSE ${DIR})
