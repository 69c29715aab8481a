-- SPDX-License-Identifier: Apache-2.0
--[[
dlx job_submit.lua: the slurmctld-side way of turning a dlx submission into a job array.

Install: copy this file next to slurm.conf (slurmctld reads job_submit.lua from the directory
of slurm.conf), set `JobSubmitPlugins=lua` in slurm.conf and add `array_via=job_submit` to the
dlx line in plugstack.conf. Then `scontrol reconfigure`.

Contract with the dlx SPANK plugin: inside sbatch, for `--dl-experiment=FILE`, the plugin calls
  spank_job_control_setenv(sp, "DLX_ARRAY_SPEC", "<spec>", 1)      -- spec such as "0-7%2"
which reaches slurmctld in job_desc.spank_job_env, a 0-indexed Lua table of "NAME=value"
strings. Verified on Slurm 22.05.8: the entry is "DLX_ARRAY_SPEC=0-7%2" (the job itself later
sees SLURM_SPANK_DLX_ARRAY_SPEC); a "SPANK_DLX_ARRAY_SPEC=" spelling is accepted as well. If the job is not already an array we set job_desc.array_inx to the
spec; a job that is already an array is left alone (an explicit `sbatch --array`, which the
plugin has validated in sbatch, or the array the plugin set itself with array_via=sbatch).
Jobs without the variable are never touched, and this script never rejects them; a dlx job is
rejected only if the spec is malformed (a plugin bug), with a message to the user.

This file is Lua 5.1 (Debian's job_submit_lua.so links liblua5.1) and also valid Lua 5.3.
]]

local VAR = "DLX_ARRAY_SPEC"

-- The array spec the dlx plugin left for us, or nil for jobs that are not dlx experiments.
local function dlx_array_spec(job_desc)
   local env = job_desc.spank_job_env
   if type(env) ~= "table" then
      return nil
   end
   -- 0-indexed table: ipairs would skip element 0, pairs sees them all.
   for _, entry in pairs(env) do
      if type(entry) == "string" then
         local name, value = string.match(entry, "^([^=]+)=(.*)$")
         if name == VAR or name == "SPANK_" .. VAR then
            return value
         end
      end
   end
   return nil
end

-- Slurm's array syntax: indices and ranges with optional ":step", comma separated, optional "%N".
local function valid_spec(spec)
   local body, limit = string.match(spec, "^([^%%]+)%%(%d+)$")
   if body == nil then
      body = spec
   end
   if body == "" or string.find(body, "%%") or (limit ~= nil and tonumber(limit) == 0) then
      return false
   end
   for item in string.gmatch(body .. ",", "([^,]*),") do
      if not (string.match(item, "^%d+$") or string.match(item, "^%d+%-%d+$")
              or string.match(item, "^%d+%-%d+:%d+$")) then
         return false
      end
   end
   return true
end

function slurm_job_submit(job_desc, part_list, submit_uid)
   local spec = dlx_array_spec(job_desc)
   if spec == nil then
      return slurm.SUCCESS
   end
   local name = job_desc.name or "?"
   if job_desc.array_inx ~= nil and job_desc.array_inx ~= "" then
      slurm.log_info("dlx: job_submit: uid %d job '%s': already an array (%s), leaving it (dlx spec %s)",
                     submit_uid, name, job_desc.array_inx, spec)
      return slurm.SUCCESS
   end
   if not valid_spec(spec) then
      slurm.log_error("dlx: job_submit: uid %d job '%s': invalid %s from the dlx plugin: %s",
                      submit_uid, name, VAR, spec)
      slurm.log_user("dlx: --dl-experiment: internal error: invalid array spec from the plugin: %s (report this to your administrator)",
                     spec)
      return slurm.ERROR
   end
   job_desc.array_inx = spec
   slurm.log_info("dlx: job_submit: uid %d job '%s': job array %s", submit_uid, name, spec)
   return slurm.SUCCESS
end

function slurm_job_modify(job_desc, job_rec, part_list, modify_uid)
   return slurm.SUCCESS
end

slurm.log_info("dlx: job_submit.lua loaded")
return slurm.SUCCESS
