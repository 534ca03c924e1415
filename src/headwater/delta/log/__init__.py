"""The transaction log: typed actions, snapshots through delta-rs (:mod:`.delta_log`) and
headwater's own replays, the one commit path (:mod:`.commit`: a transaction opened at a read
version, its commitInfo in :mod:`.operations`, the put-if-absent in :mod:`.store`),
protocols and features, deletion-vector files, the liquid-clustering domain, history and
time travel. May import ``schema`` and the faces below it; never the rooms that read or
write data files."""
