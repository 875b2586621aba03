-- Argo CD health of Junction's kinds (UserPlaneFunction, SteeringPolicy, ATSSSSession, AddressPool,
-- P4RuntimeTarget).
-- It reads the status the way kstatus does (api/v1alpha1/common_types.go), so Argo CD, Flux
-- and `kubectl wait` agree: an object the operator has not seen at its generation, or one with
-- Reconciling=True (also while an object it names does not exist yet), is Progressing;
-- Stalled=True (a full table, a conflict, an invalid pipeline or TLS Secret) is Degraded;
-- Ready=True is Healthy.
-- `make manifests` copies this file into argocd-cm.yaml for each kind.
-- An AddressPool or a P4RuntimeTarget is an administrator's grant with no status: there, it is
-- in force.
if obj.kind == "AddressPool" then
  return {status = "Healthy", message = "a grant of addresses; nothing to reconcile"}
end
if obj.kind == "P4RuntimeTarget" then
  return {status = "Healthy", message = "a grant of a P4Runtime device; nothing to reconcile"}
end
local hs = {status = "Progressing", message = "Waiting for the Junction operator"}
if obj.status == nil then
  return hs
end
local generation = obj.metadata.generation
local observed = obj.status.observedGeneration
if generation ~= nil and (observed == nil or observed < generation) then
  hs.message = "Waiting for the operator to observe generation " .. generation
  return hs
end
local ready = nil
if obj.status.conditions ~= nil then
  for _, c in ipairs(obj.status.conditions) do
    if c.type == "Stalled" and c.status == "True" then
      return {status = "Degraded", message = c.reason .. ": " .. (c.message or "")}
    end
    if c.type == "Reconciling" and c.status == "True" then
      return {status = "Progressing", message = c.reason .. ": " .. (c.message or "")}
    end
    if c.type == "Ready" then
      ready = c
    end
  end
end
if ready ~= nil and ready.status == "True" then
  return {status = "Healthy", message = ready.message or ""}
end
if ready ~= nil then
  hs.message = ready.reason .. ": " .. (ready.message or "")
end
return hs
