package broker
