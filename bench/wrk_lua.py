"""wrk's Lua scripts of ``bench/vs_etcd.py``: etcd's put-if-never-created and tenure's acquire.

Each request names a fresh key; tenure's asks for leases of ``TTL`` seconds (60 when unset) as
the API key ``KEY`` (both from the environment wrk runs in).
"""

# Fresh key per request: thread id, a per-thread counter and a per-run nonce keep them unique
# (RUN, set per run by vs_etcd.wrk(): LuaJIT's math.random is not seeded, so alone it repeats).
LUA_COMMON = """
-- tid and nonce are globals of each thread's own Lua state, set by setup() below.
local counter = 0
local threads = 0
function setup(thread)
  threads = threads + 1
  thread:set("tid", threads)
  thread:set("nonce", tonumber(os.getenv("RUN") or math.random(1, 2^30)))
end
function init(args)
  counter = 0
end
"""

LUA_ETCD = (
    LUA_COMMON
    + """
local b = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/'
local function b64(data)
  return ((data:gsub('.', function(x)
    local r, byte = '', x:byte()
    for i = 8, 1, -1 do r = r .. (byte % 2^i - byte % 2^(i-1) > 0 and '1' or '0') end
    return r
  end) .. '0000'):gsub('%d%d%d?%d?%d?%d?', function(x)
    if #x < 6 then return '' end
    local c = 0
    for i = 1, 6 do c = c + (x:sub(i, i) == '1' and 2^(6 - i) or 0) end
    return b:sub(c + 1, c + 1)
  end) .. ({ '', '==', '=' })[#data % 3 + 1])
end
local value = b64("worker-1")
function request()
  counter = counter + 1
  local key = b64(string.format("job-%d-%d-%d", nonce, tid, counter))
  local body = '{"compare":[{"key":"' .. key .. '","result":"EQUAL","target":"CREATE",'
    .. '"create_revision":"0"}],"success":[{"request_put":{"key":"' .. key
    .. '","value":"' .. value .. '"}}]}'
  return wrk.format("POST", "/v3/kv/txn", {["Content-Type"] = "application/json"}, body)
end
"""
)

LUA_TENURE = (
    LUA_COMMON
    + """
local ttl = tonumber(os.getenv("TTL") or "60")
function request()
  counter = counter + 1
  local body = string.format(
    '{"resource":"job-%d-%d-%d","holder":"worker-1","ttlSeconds":%d}', nonce, tid, counter, ttl)
  return wrk.format("POST", "/api/v1/lease/acquire",
    {["Content-Type"] = "application/json", ["Authorization"] = "Bearer " .. os.getenv("KEY")},
    body)
end
"""
)
