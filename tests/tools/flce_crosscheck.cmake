# The documented cross-check session as a test: inputs from flce_crosscheck.py, `tessel flce` at
# f64, and the script's independent plain-Python reference within 1e-12; then the RL-style options
# (temperature, causal shift, entropy bonus, per-row lse, target log-probabilities and entropy),
# with the argmax and the token accuracy in both; then soft targets.
# Variables: CLI (the tessel executable), SCRIPT (flce_crosscheck.py), DIR (a scratch directory).
file(REMOVE_RECURSE ${DIR})
include(${CMAKE_CURRENT_LIST_DIR}/script_step.cmake)
find_program(PYTHON3 python3 REQUIRED)
file(MAKE_DIRECTORY ${DIR})
step(${PYTHON3} ${SCRIPT} make-inputs ${DIR} --bt 7 --hidden 5 --vocab 11 --seed 3)
step(${CLI} flce --input x.npy --weight w.npy --target y.npy --bias b.npy --class-weights cw.npy
     --label-smoothing 0.2 --lse-square-scale 0.01 --softcap 5 --reduction sum --dtype f64
     --loss-out loss.npy --grad-input-out dx.npy --grad-weight-out dw.npy --grad-bias-out db.npy
     --argmax-out argmax.npy --accuracy-out accuracy.npy)
step(${PYTHON3} ${SCRIPT} compare ${DIR} --backend python --bias --class-weights
     --label-smoothing 0.2 --lse-square-scale 0.01 --softcap 5 --reduction sum --tolerance 1e-12)
file(REMOVE ${DIR}/loss.npy ${DIR}/dx.npy ${DIR}/dw.npy ${DIR}/db.npy ${DIR}/argmax.npy
     ${DIR}/accuracy.npy)
step(${CLI} flce --input x.npy --weight w.npy --target y.npy --bias b.npy --softcap 5
     --temperature 0.6 --shift-sequence-length 7 --entropy-bonus 0.25 --reduction none --dtype f64
     --loss-out loss.npy --grad-input-out dx.npy --grad-weight-out dw.npy --grad-bias-out db.npy
     --lse-out lse.npy --target-logprob-out logp.npy --entropy-out entropy.npy
     --argmax-out argmax.npy --accuracy-out accuracy.npy)
step(${PYTHON3} ${SCRIPT} compare ${DIR} --backend python --bias --softcap 5 --temperature 0.6
     --shift-sequence-length 7 --entropy-bonus 0.25 --reduction none --tolerance 1e-12)
# Soft targets (the script's si.npy / sp.npy: a teacher's top-3, one class repeated), alpha 0.6,
# with smoothing, class weights, softcap and temperature, mean over the non-ignored rows.
file(REMOVE ${DIR}/loss.npy ${DIR}/dx.npy ${DIR}/dw.npy ${DIR}/db.npy ${DIR}/lse.npy ${DIR}/logp.npy
     ${DIR}/entropy.npy ${DIR}/argmax.npy ${DIR}/accuracy.npy)
step(${CLI} flce --input x.npy --weight w.npy --target y.npy --bias b.npy --class-weights cw.npy
     --soft-target-indices si.npy --soft-target-probs sp.npy --soft-target-weight 0.6
     --label-smoothing 0.1 --softcap 5 --temperature 0.8 --dtype f64
     --loss-out loss.npy --grad-input-out dx.npy --grad-weight-out dw.npy --grad-bias-out db.npy)
step(${PYTHON3} ${SCRIPT} compare ${DIR} --backend python --bias --class-weights --soft-targets
     --soft-target-weight 0.6 --label-smoothing 0.1 --softcap 5 --temperature 0.8
     --tolerance 1e-12)
file(REMOVE_RECURSE ${DIR})
