# The functions that cmake/layers.cmake declares the layers with, and the
# link of a program layer's target to the layers it uses.
#
# Needs FEEDLINE_PRIVATE_LIBS, OPENCV_INCLUDE_DIR and HDF5_INCLUDE_DIRS.
# Sets FEEDLINE_OBJECTS (the objects of every library layer, for libfeedline
# and feedline_internal) in the caller's scope.

# Fails unless each of ARGN is a layer of `kind` declared before `name`.
function(_feedline_check_uses name kind)
  foreach(used ${ARGN})
    get_property(used_kind GLOBAL PROPERTY FEEDLINE_LAYER_${used}_KIND)
    if(NOT used_kind)
      message(FATAL_ERROR "cmake/layers.cmake: layer ${name} uses ${used}, which is not "
        "declared before it")
    endif()
    if(NOT used_kind STREQUAL kind)
      message(FATAL_ERROR "cmake/layers.cmake: layer ${name} uses ${used}, a ${used_kind} "
        "layer; a ${kind} layer uses ${kind} layers only")
    endif()
  endforeach()
endfunction()

function(feedline_library_layer name)
  cmake_parse_arguments(PARSE_ARGV 1 arg "" "" "USES")
  if(arg_UNPARSED_ARGUMENTS)
    message(FATAL_ERROR "feedline_library_layer(${name}): unexpected ${arg_UNPARSED_ARGUMENTS}")
  endif()
  _feedline_check_uses(${name} library ${arg_USES})
  # What the layer may use: itself, the layers it names and what they may use.
  set(closure ${name})
  foreach(used ${arg_USES})
    get_property(used_closure GLOBAL PROPERTY FEEDLINE_LAYER_${used}_CLOSURE)
    list(APPEND closure ${used_closure})
  endforeach()
  list(REMOVE_DUPLICATES closure)
  set_property(GLOBAL PROPERTY FEEDLINE_LAYER_${name}_KIND library)
  set_property(GLOBAL PROPERTY FEEDLINE_LAYER_${name}_CLOSURE ${closure})

  file(GLOB sources CONFIGURE_DEPENDS ${PROJECT_SOURCE_DIR}/src/${name}/*.cc)
  set(target feedline_${name})
  add_library(${target} OBJECT ${sources})
  set_target_properties(${target} PROPERTIES CXX_VISIBILITY_PRESET hidden VISIBILITY_INLINES_HIDDEN ON)
  target_include_directories(${target}
    PUBLIC ${PROJECT_SOURCE_DIR}/include
    PRIVATE ${PROJECT_SOURCE_DIR} ${OPENCV_INCLUDE_DIR} ${HDF5_INCLUDE_DIRS})
  set(used_targets "")
  foreach(used ${arg_USES})
    list(APPEND used_targets feedline_${used})
  endforeach()
  target_link_libraries(${target} PUBLIC Threads::Threads ${used_targets}
    PRIVATE ${FEEDLINE_PRIVATE_LIBS})

  # The link dependencies follow the declaration, checked by the build
  # (developer builds, not under a sanitizer, whose runtime a shared object
  # leaves undefined): each layer, linked with the layers it may use only and
  # --no-undefined, must resolve every symbol it uses, so code that calls
  # into another layer fails to link whatever it includes.
  if(FEEDLINE_BUILD_TESTS AND FEEDLINE_SANITIZE STREQUAL "")
    set(objects "")
    foreach(layer ${closure})
      list(APPEND objects $<TARGET_OBJECTS:feedline_${layer}>)
    endforeach()
    add_library(${target}_links_down SHARED ${objects})
    target_link_libraries(${target}_links_down PRIVATE Threads::Threads ${FEEDLINE_PRIVATE_LIBS})
    target_link_options(${target}_links_down PRIVATE -Wl,--no-undefined)
  endif()
  set(FEEDLINE_OBJECTS ${FEEDLINE_OBJECTS} $<TARGET_OBJECTS:${target}> PARENT_SCOPE)
endfunction()

function(feedline_program_layer name)
  cmake_parse_arguments(PARSE_ARGV 1 arg "" "TARGET" "USES")
  if(arg_UNPARSED_ARGUMENTS OR NOT arg_TARGET)
    message(FATAL_ERROR "feedline_program_layer(${name}): takes TARGET target [USES layer...]")
  endif()
  _feedline_check_uses(${name} program ${arg_USES})
  set_property(GLOBAL PROPERTY FEEDLINE_LAYER_${name}_KIND program)
  set_property(GLOBAL PROPERTY FEEDLINE_LAYER_${name}_TARGET ${arg_TARGET})
  set_property(GLOBAL PROPERTY FEEDLINE_LAYER_${name}_USES ${arg_USES})
endfunction()

# Links program layer `name`'s target to the targets of the layers it uses,
# with `scope` (PUBLIC, PRIVATE), once that target exists.
function(feedline_link_layer_uses name scope)
  get_property(target GLOBAL PROPERTY FEEDLINE_LAYER_${name}_TARGET)
  get_property(uses GLOBAL PROPERTY FEEDLINE_LAYER_${name}_USES)
  if(NOT target)
    message(FATAL_ERROR "feedline_link_layer_uses: ${name} is no program layer (cmake/layers.cmake)")
  endif()
  foreach(used ${uses})
    get_property(used_target GLOBAL PROPERTY FEEDLINE_LAYER_${used}_TARGET)
    target_link_libraries(${target} ${scope} ${used_target})
  endforeach()
endfunction()
