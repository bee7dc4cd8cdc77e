# The peer link's flags and launches refused by name with the fix, no crash: a role without a link file, a role that
# is neither 0 nor 1 (usage errors), and a link on the CPU backend, which has no hybrid path to join (exit 2, as
# every launch error). The same launch without the link runs.
include(${CMAKE_CURRENT_LIST_DIR}/common.inc)
set(STORIES ${SRC}/models/stories260K.gguf)
set(link ${WORK}/pair.link)
file(MAKE_DIRECTORY ${WORK})
strata_run(2 OUT o ERR role_only ARGS engine --model ${STORIES} --peer-link-role 1)
expect_contains("${role_only}" "--peer-link-role needs --peer-link FILE")
strata_run(2 OUT o ERR bad_role ARGS engine --model ${STORIES} --peer-link ${link} --peer-link-role 2)
expect_contains("${bad_role}" "--peer-link-role 2: give 0 or 1")
strata_run(2 OUT o ERR cpu ARGS engine --model ${STORIES} -o backend=cpu_avx2 --peer-link ${link} --peer-link-role 0)
expect_contains("${cpu}" "peerlink (the peer link) joins two engines' hybrid paths")
expect_contains("${cpu}" "or switch peerlink off")
strata_run(2 OUT o ERR yaml ARGS run --model ${STORIES} --backend cpu_avx2 --prompt "Once" -n 2
           -o plugins.peerlink.enabled=true -o plugins.peerlink.file=${link} -o plugins.peerlink.role=0)
expect_contains("${yaml}" "joins two engines' hybrid paths")
