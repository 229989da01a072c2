"""The PE reconciler: each ProcessingElement gets its pod (`pes.controller`), launched and relaunched
by the pure decision of `pes.lifecycle`; `pods_by_owner` indexes PE pods by their PE."""
