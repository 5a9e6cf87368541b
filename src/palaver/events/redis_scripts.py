"""The Lua scripts of the Redis queue store: every change to a queue is one of these.

Each runs atomically in Redis, so processes never see half an update. Key layout: see
``redis_backend.py``.
"""

from __future__ import annotations

# Keys outlive their queue's deadline by this much, then Redis deletes them itself: a
# deployment whose processes are all gone leaves nothing behind for ever.
KEY_EXPIRY_SLACK_SECONDS = 60

# Lua: make ``key`` live at least until ``until_s`` (client clock), never shortening it.
EXTEND = """
local function extend(key, now, until_s)
  local wanted = math.ceil((until_s - now) * 1000)
  local left = redis.call('PTTL', key)
  if left == -1 or (left >= 0 and left < wanted) then
    redis.call('PEXPIRE', key, wanted)
  end
end
"""

# KEYS: q, ev, queues. ARGV: queue_id, user_id, last_event_id or "", token, claim, final,
# now, hold_seconds, channel, prefix, slack. Returns {"missing"}, {"pruned"}, or
# {"ok", done, events}.
FETCH = (
    EXTEND
    + """
local q, ev = KEYS[1], KEYS[2]
local queue_id, user_id, last, token = ARGV[1], ARGV[2], ARGV[3], ARGV[4]
local claim, final, now, hold, channel = ARGV[5], ARGV[6], tonumber(ARGV[7]), tonumber(ARGV[8]), ARGV[9]
local info = redis.call('HMGET', q, 'user_id', 'deadline', 'pruned', 'poller', 'lifespan')
if not info[1] or info[1] ~= user_id or tonumber(info[2]) < now then
  return {'missing'}
end
if last ~= '' then
  local through = tonumber(last)
  if through < tonumber(info[3]) then
    return {'pruned'}
  end
  local newest = redis.call('ZREVRANGEBYSCORE', ev, through, '-inf', 'WITHSCORES', 'LIMIT', 0, 1)
  if #newest > 0 then
    redis.call('HSET', q, 'pruned', newest[2])
    redis.call('ZREMRANGEBYSCORE', ev, '-inf', through)
  end
end
local poller = info[4]
if claim == '1' then
  if poller and poller ~= token then
    redis.call('PUBLISH', channel, queue_id)
  end
  redis.call('HSET', q, 'poller', token)
  poller = token
end
local events = redis.call('ZRANGE', ev, 0, -1)
local lifespan = tonumber(info[5])
local done = final == '1' or #events > 0 or poller ~= token
local deadline
if done then
  if poller == token then
    redis.call('HDEL', q, 'poller')
  end
  deadline = now + lifespan
else
  deadline = now + math.max(lifespan, hold)
end
redis.call('HSET', q, 'deadline', deadline)
redis.call('ZADD', KEYS[3], deadline, queue_id)
local prefix, expires = ARGV[10], deadline + tonumber(ARGV[11])
for _, key in ipairs({q, ev, KEYS[3], prefix .. 'user:' .. info[1],
                      prefix .. 'public:' .. redis.call('HGET', q, 'realm_id')}) do
  extend(key, now, expires)
end
return {'ok', done and '1' or '0', events}
"""
)

# KEYS: q1, ev1, q2, ev2, ... ARGV: channel, body count n, body1..bodyn, then per queue
# its ID and the index of its body. A body is the event's JSON open for its ``id`` member
# (``SharedEvent.head``): each queue's copy is one body shared by every queue of a shape.
APPEND = """
local n = tonumber(ARGV[2])
local woken = {}
for i = 1, #KEYS / 2 do
  local q, ev = KEYS[2 * i - 1], KEYS[2 * i]
  if redis.call('EXISTS', q) == 1 then
    local id = redis.call('HINCRBY', q, 'next_id', 1) - 1
    local queue_id = ARGV[2 + n + 2 * i - 1]
    local body = ARGV[2 + tonumber(ARGV[2 + n + 2 * i])]
    redis.call('ZADD', ev, id, body .. id .. '}')
    -- The events expire with their queue (whose expiry each poll extends).
    local left = redis.call('PTTL', q)
    if left > 0 then
      redis.call('PEXPIRE', ev, left)
    end
    woken[#woken + 1] = queue_id
  end
end
if #woken > 0 then
  redis.call('PUBLISH', ARGV[1], table.concat(woken, ' '))
end
return #woken
"""

# KEYS: q, ev, queues. ARGV: queue_id, prefix, channel, mode, user_id, now.
# mode "delete": only the owner's, unexpired queue. mode "collect": only if expired at now.
REMOVE = """
local q, ev, queues = KEYS[1], KEYS[2], KEYS[3]
local queue_id, prefix, channel, mode, now = ARGV[1], ARGV[2], ARGV[3], ARGV[4], tonumber(ARGV[6])
local info = redis.call('HMGET', q, 'user_id', 'realm_id', 'deadline')
local score = redis.call('ZSCORE', queues, queue_id)
if not score and not info[1] then
  return 0
end
local deadline = tonumber(score or info[3])
if mode == 'delete' then
  if not info[1] or info[1] ~= ARGV[5] or deadline < now then
    return 0
  end
elseif deadline > now then
  return 0
end
redis.call('DEL', q, ev)
redis.call('ZREM', queues, queue_id)
if info[1] then
  redis.call('SREM', prefix .. 'user:' .. info[1], queue_id)
  redis.call('SREM', prefix .. 'public:' .. info[2], queue_id)
end
redis.call('PUBLISH', channel, queue_id)
return 1
"""

# Publishing in one round trip. The publisher tailors the event once per client shape it
# knows of (``ClientDescriptor.shape``, named by ``shape_id``); each queue's hash names its
# shape, so the script finds every recipient queue and appends its shape's copy itself.
# Queues it cannot serve (a shape the publisher did not send, a narrowed queue, whose shape
# is "", or a queue registered before shapes were recorded) are returned: the publisher
# reads their descriptors and appends to them with APPEND, a second round trip.
#
# ARGV: channel, prefix, realm_id, sender_queue_id or "", public ("1" or "0"),
#       user count u, user IDs..., skipped user count k, skipped user IDs...,
#       shape count s, then per shape: its ID, its body, the sender queue's body.
# A body is as in APPEND ("" when that shape gets nothing). Skipped users get nothing.
# Returns the queue IDs left to the publisher.
PUBLISH = """
local channel, prefix, realm, sender = ARGV[1], ARGV[2], ARGV[3], ARGV[4]
local at = 6
local sets = {}
for i = 1, tonumber(ARGV[at]) do
  sets[#sets + 1] = prefix .. 'user:' .. ARGV[at + i]
end
at = at + tonumber(ARGV[at]) + 1
if ARGV[5] == '1' then
  sets[#sets + 1] = prefix .. 'public:' .. realm
end
local skipped = {}
for i = 1, tonumber(ARGV[at]) do
  skipped[ARGV[at + i]] = true
end
at = at + tonumber(ARGV[at]) + 1
local bodies, sender_bodies = {}, {}
for i = 1, tonumber(ARGV[at]) do
  local base = at + 3 * (i - 1)
  bodies[ARGV[base + 1]] = ARGV[base + 2]
  sender_bodies[ARGV[base + 1]] = ARGV[base + 3]
end
-- SUNION in slices: Lua's stack bounds how many arguments one call may take.
local queues, seen = {}, {}
for first = 1, #sets, 1000 do
  local members = redis.call('SUNION', unpack(sets, first, math.min(first + 999, #sets)))
  for _, queue_id in ipairs(members) do
    if not seen[queue_id] then
      seen[queue_id] = true
      queues[#queues + 1] = queue_id
    end
  end
end
local woken, left = {}, {}
for _, queue_id in ipairs(queues) do
  local q = prefix .. 'q:' .. queue_id
  local info = redis.call('HMGET', q, 'realm_id', 'shape', 'user_id')
  if info[1] == realm and not skipped[info[3]] then
    local body
    if info[2] then
      if queue_id == sender then
        body = sender_bodies[info[2]]
      else
        body = bodies[info[2]]
      end
    end
    if body == nil then
      left[#left + 1] = queue_id
    elseif body ~= '' then
      local id = redis.call('HINCRBY', q, 'next_id', 1) - 1
      local ev = prefix .. 'ev:' .. queue_id
      redis.call('ZADD', ev, id, body .. id .. '}')
      local ttl = redis.call('PTTL', q)
      if ttl > 0 then
        redis.call('PEXPIRE', ev, ttl)
      end
      woken[#woken + 1] = queue_id
    end
  end
end
if #woken > 0 then
  redis.call('PUBLISH', channel, table.concat(woken, ' '))
end
return left
"""
