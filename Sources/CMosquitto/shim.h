#pragma once
// libmosquitto (Debian's libmosquitto-dev): the MQTT client that carries the speaker to Home Assistant.
#include <mosquitto.h>
