-- The ruler's load (bench/sliced.js): one endpoint, its requests sent by CLIENTS clients in turn (Authorization
-- `Bot bench-token-1`, `-2`, ...), so that no client's counter reaches the allowed table's limit of 10,000 a second
-- however fast a server answers. wrk runs it with `-s bench/clients.lua <url> -- <clients>`.
local requests = {}
local sent = 0

function init(args)
  for i = 1, tonumber(args[1]) do
    requests[i] = wrk.format(nil, nil, { Authorization = "Bot bench-token-" .. i })
  end
end

function request()
  sent = sent % #requests + 1
  return requests[sent]
end
