-- SPDX-License-Identifier: Apache-2.0
-- Unit test of site-config/job_submit.lua outside slurmctld, with a stub `slurm` table.
-- Usage: lua5.3 job_submit_lua_test.lua PATH/TO/job_submit.lua   (exit 0 = all passed)
-- The real slurmctld path (Lua 5.1 inside job_submit_lua.so) is covered by cluster_tooling_test.sh.
slurm = {SUCCESS = 0, ERROR = -1, logs = {}}
function slurm.log_info(fmt, ...) table.insert(slurm.logs, string.format(fmt, ...)) end
slurm.log_error = slurm.log_info
slurm.log_user = slurm.log_info
dofile(arg[1])

local failures = 0
-- check(description, spank_job_env, array_inx before, expected rc, expected array_inx after)
local function check(desc, env, inx, want_rc, want_inx)
   local job_desc = {name = "t", spank_job_env = env, array_inx = inx}
   local rc = slurm_job_submit(job_desc, {}, 1000)
   if rc == want_rc and job_desc.array_inx == want_inx then
      print("ok   " .. desc)
   else
      failures = failures + 1
      print("FAIL " .. desc)
      print(string.format("     expected: rc=%s array_inx=%s", tostring(want_rc), tostring(want_inx)))
      print(string.format("     seen:     rc=%s array_inx=%s", tostring(rc), tostring(job_desc.array_inx)))
   end
end

-- spank_job_env is 0-indexed, as slurmctld builds it; 22.05 stores "DLX_ARRAY_SPEC=<spec>".
check("job without spank env is untouched", nil, nil, slurm.SUCCESS, nil)
check("job with other variables is untouched", {[0] = "FOO=1", [1] = "SPANK_BAR=2"}, nil, slurm.SUCCESS, nil)
check("DLX_ARRAY_SPEC at index 0 sets the array", {[0] = "DLX_ARRAY_SPEC=0-7%2"}, nil, slurm.SUCCESS, "0-7%2")
check("SPANK_-prefixed spelling is accepted", {[0] = "X=1", [1] = "SPANK_DLX_ARRAY_SPEC=0-3"}, nil,
      slurm.SUCCESS, "0-3")
check("an explicit --array is kept", {[0] = "DLX_ARRAY_SPEC=0-3"}, "1,5", slurm.SUCCESS, "1,5")
check("an empty array_inx counts as no array", {[0] = "DLX_ARRAY_SPEC=0-3"}, "", slurm.SUCCESS, "0-3")
check("lists, steps and a throttle are valid", {[0] = "DLX_ARRAY_SPEC=0,2,4-10:2%3"}, nil,
      slurm.SUCCESS, "0,2,4-10:2%3")
check("a similar variable name is ignored", {[0] = "DLX_ARRAY_SPEC2=0-3"}, nil, slurm.SUCCESS, nil)
check("a trailing % is rejected", {[0] = "DLX_ARRAY_SPEC=0-7%"}, nil, slurm.ERROR, nil)
check("a non-numeric spec is rejected", {[0] = "DLX_ARRAY_SPEC=abc"}, nil, slurm.ERROR, nil)
check("a zero throttle is rejected", {[0] = "DLX_ARRAY_SPEC=0-7%0"}, nil, slurm.ERROR, nil)
check("an empty spec is rejected", {[0] = "DLX_ARRAY_SPEC="}, nil, slurm.ERROR, nil)

local user_msg = false
for _, line in ipairs(slurm.logs) do
   if string.find(line, "dlx: --dl-experiment: internal error", 1, true) then user_msg = true end
end
if user_msg then print("ok   a rejected spec tells the user why")
else failures = failures + 1; print("FAIL a rejected spec tells the user why\n     expected: a 'dlx: --dl-experiment:' message\n     seen:     none") end
if slurm_job_modify({}, {}, {}, 0) == slurm.SUCCESS then print("ok   slurm_job_modify passes through")
else failures = failures + 1; print("FAIL slurm_job_modify passes through") end

print(string.format("# %d failure(s)", failures))
os.exit(failures == 0 and 0 or 1)
