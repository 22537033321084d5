# The layers of the source tree and what each may use: the one declaration of
# the layer order. The build links by it (cmake/layer_functions.cmake) and
# scripts/check_layering.py checks every include against it
# (docs/architecture.md, "Layers").
#
# feedline_library_layer(NAME [USES LAYER...])
#   src/NAME/, compiled into libfeedline as the object library feedline_NAME.
#   Its code may use the layers it names and whatever those may use, no other.
#   A layer names only layers declared before it, so the declaration has no
#   cycle.
# feedline_program_layer(NAME TARGET TARGET [USES LAYER...])
#   Code built on the library's public headers (include/feedline/, the
#   extension surface include/feedline/extension/ included) only, no src/
#   header of a library layer; it may use the program layers it names,
#   whose targets TARGET links (feedline_link_layer_uses).
#
# Keep one call per layer; the check reads the calls as written here.

feedline_library_layer(core)
feedline_library_layer(data USES core)
feedline_library_layer(loader USES data)
# Worker processes implement the engine's extension points (LoadBackend,
# SlotAllocator) and read the host's memory budget from the tuner.
feedline_library_layer(process USES loader)
# The one place that knows both the engine and worker processes.
feedline_library_layer(loader_factory USES loader process)
feedline_library_layer(vision USES data)
feedline_library_layer(storage USES vision)
feedline_library_layer(text USES data)

# Synthetic data: src/synth/ behind include/feedline/synth/, not installed.
feedline_program_layer(synth TARGET feedline_synth)
# The `feedline` command.
feedline_program_layer(tools TARGET feedline_cli_lib USES synth)
# The Python module; it runs the whole command (tools/run_command.h), and
# its worker processes and loaders go through the extension surface.
feedline_program_layer(python TARGET feedline_python USES tools synth)
