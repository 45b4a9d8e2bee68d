# gdb commands of the pretty-printer test (check_printers.py checks what they print).
set pagination off
set print pretty off
info auto-load python-scripts
break inspect_here
run
echo === entity\n
print mover
print labelled
print dead
print none
echo === world\n
print world
echo === query\n
print moving
print unrun
echo === archetype_info\n
print info
echo === component_id\n
print info.components._M_ptr[2]
echo === components\n
tessera-get world mover Position
tessera-get world labelled game::Label
tessera-get world 3:2 Health
print $tessera_get(world, mover, "Velocity")
print $tessera_get(world, labelled, "Health").hp
tessera-components world labelled
tessera-components world 1:1
tessera-entities world
echo === errors\n
python
for command in ("tessera-get world dead Health", "tessera-get world none Health",
                "tessera-get world mover Health", "tessera-get world mover Nothing"):
    try:
        gdb.execute(command)
    except gdb.error as e:
        print("error:", e)
end
echo === moved\n
print moved
echo === done\n
kill
